-- test/pgtap/42_fdw_integrity.sql: the foreign table never reads a lie
-- (I5).  A landed file with an appended line, a truncated file, a
-- deleted file and a file with one edited byte are each refused with
-- SQLSTATE XX001 naming the batch and the file, and kafka_lake.verify()
-- reports each; intact batches still read.  A line that is not what land()
-- writes (its CRC made to match, so only the parser can see it) is refused
-- naming file and line.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(21);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text; hint text; ctx text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
                          hint = PG_EXCEPTION_HINT, ctx = PG_EXCEPTION_CONTEXT;
  RETURN st || E'\n' || msg || E'\nDETAIL: ' || coalesce(det, '') || E'\nHINT: ' || coalesce(hint, '')
         || E'\nCONTEXT: ' || coalesce(ctx, '');
END $$;

\o /dev/null
SELECT kl_test.server('fdw42_kafka');
SELECT kl_test.broker('create fdw42.events 1');
SELECT kafka_lake.create_source('fdw42', 'fdw42_kafka', 'fdw42.events');
SELECT kafka_lake.set_compression('fdw42', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kl_test.fill('fdw42.events', 25, 1);
SET kafka_lake.batch_max_records = 5;
SELECT * FROM kafka_lake.land('fdw42');
\o

-- the five batches, and the path of each one's accepted.jsonl
CREATE TEMP TABLE fdw42_b AS
  SELECT row_number() OVER (ORDER BY first_offset) AS n, batch_id,
         kl_test.landing('fdw42') || '/topic=fdw42.events/partition=0/batch=' || batch_id || '/accepted.jsonl' AS path
    FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'fdw42';
SELECT batch_id AS b1, path AS p1 FROM fdw42_b WHERE n = 1 \gset
SELECT batch_id AS b2, path AS p2 FROM fdw42_b WHERE n = 2 \gset
SELECT batch_id AS b3, path AS p3 FROM fdw42_b WHERE n = 3 \gset
SELECT batch_id AS b4, path AS p4 FROM fdw42_b WHERE n = 4 \gset
SELECT batch_id AS b5, path AS p5 FROM fdw42_b WHERE n = 5 \gset

SELECT is((SELECT count(*)::int FROM fdw42_b), 5, 'five batches');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw42_records), 25, 'before: 25 records');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('fdw42')), 0, 'before: verify finds nothing');
SELECT is(kl_test.crc32c(pg_read_binary_file(:'p1')),
          (SELECT file_crc32c[1] FROM kafka_lake.batches WHERE batch_id = :'b1'),
          'the test''s CRC-32C agrees with the catalog''s');

-- damage four batches, one way each; the fifth stays intact
\o /dev/null
SELECT kl_test.sh(format('printf ''{"event": {}, "kafka": {"offset": 99}}\n'' >> %s', :'p1'));
SELECT kl_test.sh(format('truncate -s -1 %s', :'p2'));
SELECT kl_test.sh(format('rm %s', :'p3'));
SELECT kl_test.sh(format('printf X | dd of=%s bs=1 seek=30 conv=notrunc 2>/dev/null', :'p4'));
\o
SELECT is(pg_read_binary_file(:'p4', 28, 4), '\x22325832'::bytea, 'one byte of batch 4 was edited');

SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b1')),
               format('^XX001\nfile accepted.jsonl of batch %s of source "fdw42" has \d+ bytes, its manifest says \d+\nDETAIL: The file was extended after it was landed.', :'b1'),
               'an appended line: XX001 naming batch and file');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b2')),
               format('^XX001\nfile accepted.jsonl of batch %s of source "fdw42" has \d+ bytes, its manifest says \d+\nDETAIL: The file was truncated after it was landed.', :'b2'),
               'a truncated file: XX001 naming batch and file');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b3')),
               format('^XX001\nfile accepted.jsonl of batch %s of source "fdw42" is missing\nDETAIL: Could not open ".*/batch=%s/accepted.jsonl": No such file or directory.', :'b3', :'b3'),
               'a deleted file: XX001 naming batch and file');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b4')),
               format('^XX001\nfile accepted.jsonl of batch %s of source "fdw42" does not match its manifest\nDETAIL: Its CRC-32C differs from its manifest''s: its bytes were edited.', :'b4'),
               'one edited byte: XX001 naming batch and file');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b4')),
               'HINT: Landed files never change. Run kafka_lake.verify\(''fdw42''\)',
               'the hint says to run verify');
SELECT is(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b5')),
          'no error', 'an intact batch still reads');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw42_records WHERE "offset" >= 20), 5,
          'a scan pruned to intact batches reads');
SELECT throws_ok('SELECT count(*) FROM kafka_lake.fdw42_records', 'XX001', NULL,
                 'a scan over damaged batches is refused');
SELECT throws_ok('SELECT event_id FROM kafka_lake.fdw42_records WHERE "offset" = 5', 'XX001', NULL,
                 'even for one row: no row of a damaged file is returned');
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw42_records WHERE status = 'quarantined'), 0,
          'files a status clause prunes are not opened');

CREATE FOREIGN TABLE fdw42_typed (units_produced int)
  SERVER fdw42_kafka OPTIONS (source 'fdw42', status 'accepted');
SELECT throws_ok('SELECT sum(units_produced) FROM fdw42_typed', 'XX001', NULL,
                 'a typed table over the same source is refused too');

-- verify reports each
SELECT set_eq(
  $$SELECT batch_id, file, problem FROM kafka_lake.verify('fdw42')$$,
  format($$VALUES (%L, 'accepted.jsonl', 'size_mismatch'), (%L, 'accepted.jsonl', 'size_mismatch'),
                  (%L, 'accepted.jsonl', 'missing_file'), (%L, 'accepted.jsonl', 'checksum_mismatch')$$,
         :'b1', :'b2', :'b3', :'b4'),
  'verify reports the appended line, the truncation, the deletion and the edited byte');
SELECT ok((SELECT bool_and(detail IS NOT NULL AND topic = 'fdw42.events' AND partition = 0)
             FROM kafka_lake.verify('fdw42')), 'each with a detail');

-- a malformed line whose CRC was made to match: only the parser can see it
\o /dev/null
SELECT kl_test.sh(format('printf [ | dd of=%s bs=1 seek=0 conv=notrunc 2>/dev/null', :'p5'));
\o
UPDATE kafka_lake.batches SET file_crc32c[1] = kl_test.crc32c(pg_read_binary_file(:'p5'))
 WHERE batch_id = :'b5';
SELECT matches(pg_temp.error_of(format('SELECT event_id FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b5')),
               format('^XX001\nlanded line is malformed: expected an object\n.*CONTEXT: kafka_lake source "fdw42", batch %s, file accepted.jsonl, line 1\n', :'b5'),
               'a malformed line: XX001 naming file and line');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.fdw42_records WHERE batch_id = %L', :'b5')),
               '^XX001\nlanded line is malformed',
               'the line is refused even when no column needs its content');
SELECT is((SELECT problem FROM kafka_lake.verify('fdw42') WHERE batch_id = :'b5'), 'checksum_mismatch',
          'verify''s SHA-256 sees what the CRC did not');

SELECT * FROM finish();
