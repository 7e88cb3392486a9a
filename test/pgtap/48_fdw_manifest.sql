-- test/pgtap/48_fdw_manifest.sql: a batch whose manifest.json is gone or edited disagrees
-- with its manifest (I5): the foreign table and the bridge refuse it with XX001 naming the
-- batch, before any of its rows is used, as they refuse a damaged data file; verify() reports
-- it too.  Intact batches, and batches the query prunes, still read.  A batch recorded without
-- the manifest's size and CRC-32C (landed by kafka_lake 1.0) is checked by the manifest's
-- SHA-256.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(14);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
  RETURN st || E'\n' || msg || E'\nHINT: ' || coalesce(hint, '');
END $$;

\o /dev/null
SELECT kl_test.server('mf48_kafka');
SELECT kl_test.broker('create mf48.t 1');
SELECT kafka_lake.create_source('mf48', 'mf48_kafka', 'mf48.t');
SELECT kafka_lake.set_compression('mf48', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('mf48_kafka', 'mf48.t', kl_test.event('evt-mf48-' || n,
                          business_date => CASE WHEN n <= 6 THEN '2026-06-29' ELSE '2026-06-30' END::date))
  FROM generate_series(1, 12) n;
SET kafka_lake.batch_max_records = 3;
SELECT * FROM kafka_lake.land('mf48');
RESET kafka_lake.batch_max_records;
\o
SELECT kl_test.landing('mf48') || '/topic=mf48.t/partition=0' AS pdir \gset
SELECT batch_id AS b1 FROM kafka_lake.batches WHERE first_offset = 0 AND topic = 'mf48.t' \gset
SELECT batch_id AS b2 FROM kafka_lake.batches WHERE first_offset = 3 AND topic = 'mf48.t' \gset
SELECT batch_id AS b4 FROM kafka_lake.batches WHERE first_offset = 9 AND topic = 'mf48.t' \gset

-- batch 1 loses its manifest; batch 2's is edited without changing its size
\o /dev/null
SELECT kl_test.sh(format('rm %s/batch=%s/manifest.json', :'pdir', :'b1'));
SELECT kl_test.sh(format('sed -i s/created_at/created_AT/ %s/batch=%s/manifest.json', :'pdir', :'b2'));
\o
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.mf48_records WHERE batch_id = %L', :'b1')),
               format('^XX001\nmanifest.json of batch %s of source "mf48" is missing\nHINT: .*kafka_lake.verify', :'b1'),
               'the foreign table refuses a batch without its manifest');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.mf48_records WHERE batch_id = %L', :'b2')),
               format('^XX001\nmanifest.json of batch %s of source "mf48" does not match the catalog', :'b2'),
               'the foreign table refuses a batch whose manifest was edited');
SELECT is(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.mf48_records WHERE batch_id = %L', :'b4')),
          'no error', 'an intact batch still reads');
SELECT is((SELECT count(*) FROM kafka_lake.mf48_records WHERE "offset" >= 6), 6::bigint,
          'a scan pruned to the intact batches reads');
SELECT matches(pg_temp.error_of($$SELECT * FROM kafka_lake.bridge('mf48', '2026-06-29')$$),
               '^XX001\nmanifest.json of batch .* of source "mf48" (is missing|does not match the catalog)',
               'the bridge refuses the date whose batches disagree with their manifests');
SELECT is((SELECT count(*) FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id)
            WHERE source = 'mf48'), 0::bigint, 'no gold was published');
SELECT results_eq($$SELECT selected_events, snapshot_status FROM kafka_lake.bridge('mf48', '2026-06-30')$$,
                  $$VALUES (6, 'published')$$, 'a date of intact batches bridges');
SELECT set_eq($$SELECT batch_id, file, problem FROM kafka_lake.verify('mf48')$$,
              format($$VALUES (%L, 'manifest.json', 'missing_file'), (%L, 'manifest.json', 'checksum_mismatch')$$,
                     :'b1', :'b2'),
              'verify() reports both');

-- a batch recorded without the manifest's size and CRC (as 1.0 recorded it): SHA-256
UPDATE kafka_lake.batches SET manifest_bytes = NULL, manifest_crc32c = NULL WHERE batch_id = :'b4';
SELECT is(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.mf48_records WHERE batch_id = %L', :'b4')),
          'no error', 'a batch recorded without size and CRC of its manifest reads');
\o /dev/null
SELECT kl_test.sh(format('sed -i s/created_at/created_AT/ %s/batch=%s/manifest.json', :'pdir', :'b4'));
\o
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.mf48_records WHERE batch_id = %L', :'b4')),
               format('^XX001\nmanifest.json of batch %s of source "mf48" does not match the catalog', :'b4'),
               'its edited manifest is found by its SHA-256');

-- verify() records size and CRC of a manifest it proved by its SHA-256
SELECT batch_id AS b3 FROM kafka_lake.batches WHERE first_offset = 6 AND topic = 'mf48.t' \gset
UPDATE kafka_lake.batches SET manifest_bytes = NULL, manifest_crc32c = NULL WHERE batch_id = :'b3';
SELECT is((SELECT count(*) FROM kafka_lake.verify('mf48') WHERE batch_id = :'b3'), 0::bigint,
          'verify() finds the 1.0-style batch intact');
SELECT is((SELECT manifest_bytes IS NOT NULL AND manifest_crc32c IS NOT NULL FROM kafka_lake.batches
            WHERE batch_id = :'b3'), true, 'and records the size and CRC-32C of its manifest');

-- the catalog's size and CRC are those of the file land() (or verify()) recorded
SELECT is((SELECT manifest_bytes FROM kafka_lake.batches WHERE batch_id = :'b3'),
          (pg_stat_file(format('%s/batch=%s/manifest.json', :'pdir', :'b3'))).size,
          'manifest_bytes is the manifest''s size');
SELECT is((SELECT manifest_crc32c FROM kafka_lake.batches WHERE batch_id = :'b3'),
          kl_test.crc32c(pg_read_binary_file(format('%s/batch=%s/manifest.json', :'pdir', :'b3'))),
          'manifest_crc32c is its CRC-32C');

SELECT * FROM finish();
