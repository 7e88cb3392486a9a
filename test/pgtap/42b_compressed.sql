-- test/pgtap/42b_compressed.sql: compressed batches.  A source created
-- now writes each batch's files as zstd frames (*.zst) that standard tools
-- read (zstdcat | jq, zstd -t, sha256sum against the catalog); the foreign
-- table, the bridge, verify(), recover()'s adoption, compact() and
-- expire() treat them as they treat plain ones, and a plain source landed
-- from the same topic reads and bridges to the same rows.  A compressed
-- file that is edited, truncated, or replaced by another valid frame (its
-- size and CRC-32C made to match in the catalog, so that only the
-- uncompressed bytes can tell) is refused with XX001 and named by
-- verify().  set_compression() refuses what it does not know, and a plain
-- role.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(45);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN st || E'\n' || msg || E'\nDETAIL: ' || coalesce(det, '');
END $$;

-- the records of a source, as one digest (what was landed, whatever the files)
CREATE FUNCTION pg_temp.records_md5(src text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SELECT md5(string_agg(concat_ws(''|'', partition, "offset", status, event_id, business_date,
                                                  raw_value, validation_error), '','' ORDER BY partition, "offset"))
                    FROM kafka_lake.%I', src || '_records') INTO r;
  RETURN r;
END $$;

\o /dev/null
SELECT kl_test.server('zst42_kafka');
SELECT kl_test.broker('create zst42.events 2');
SELECT kafka_lake.create_source('zst42', 'zst42_kafka', 'zst42.events');
SELECT kafka_lake.create_source('zst42p', 'zst42_kafka', 'zst42.events', group_id => 'zst42-plain');
SELECT kafka_lake.set_compression('zst42p', 'none');
-- 60 events, every 7th invalid JSON, then 10 of them again (duplicates)
SELECT kl_test.fill('zst42.events', 60, 2, 1, '--bad-every 7');
SELECT kl_test.fill('zst42.events', 10, 2, 1);
SET kafka_lake.batch_max_records = 10;
SELECT * FROM kafka_lake.land('zst42');
SELECT * FROM kafka_lake.land('zst42p');
\o

SELECT is((SELECT compression FROM kafka_lake.sources WHERE source = 'zst42'), 'zstd',
          'a new source compresses');
SELECT is((SELECT compression FROM kafka_lake.sources WHERE source = 'zst42p'), 'none',
          'set_compression(none) keeps a source plain');
SELECT is((SELECT count(*)::int FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'zst42' AND b.compression = 'zstd' AND b.file_raw_bytes IS NOT NULL), 8,
          'each batch of the compressed source says so, with its raw sizes');
SELECT is((SELECT count(*)::int FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'zst42p' AND b.compression IS NULL AND b.file_raw_bytes IS NULL), 8,
          'each batch of the plain source is plain');
SELECT ok((SELECT bool_and(b.file_bytes[1] < b.file_raw_bytes[1]) AND sum(b.file_bytes[1]) * 2 < sum(b.file_raw_bytes[1])
             FROM kafka_lake.batches b
             JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'zst42' AND b.accepted_count > 0),
          'each accepted.jsonl.zst is smaller than its lines, all of them under half');
SELECT is((SELECT sum(b.file_raw_bytes[1] + b.file_raw_bytes[2] + b.file_raw_bytes[3]) FROM kafka_lake.batches b
             JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'zst42'),
          (SELECT sum(b.file_bytes[1] + b.file_bytes[2] + b.file_bytes[3]) FROM kafka_lake.batches b
             JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'zst42p'),
          'the raw sizes are the plain source''s file sizes');

SELECT source_id AS zid FROM kafka_lake.sources WHERE source = 'zst42' \gset
-- the first batch of partition 0 of each (the two sources' batches have the same ids)
SELECT kl_test.landing('zst42') || '/topic=zst42.events/partition=0/batch=' || batch_id AS d1, batch_id AS b1,
       file_sha256[1] AS sha1, file_lines[1] AS lines1, accepted_count AS acc1, file_raw_bytes[1] AS raw1
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'zst42' AND partition = 0 ORDER BY first_offset LIMIT 1 \gset
SELECT kl_test.landing('zst42p') || '/topic=zst42.events/partition=0/batch=' || batch_id AS p1
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'zst42p' AND partition = 0 ORDER BY first_offset LIMIT 1 \gset

SELECT is(kl_test.sh(format('ls %s', :'d1')),
          E'accepted.jsonl.zst\nduplicates.jsonl.zst\nmanifest.json.zst\nquarantine.jsonl.zst',
          'a compressed batch holds the four files, each .zst');
SELECT is(kl_test.sh(format('ls %s', :'p1')),
          E'accepted.jsonl\nduplicates.jsonl\nmanifest.json\nquarantine.jsonl',
          'a plain batch holds the four files of the layout');
SELECT is(kl_test.sh(format('zstd -q -t %s/*.zst && echo ok', :'d1')), 'ok',
          'zstd -t: every file is a whole zstd frame, its checksum right');
SELECT is(kl_test.sh(format('zstdcat %s/accepted.jsonl.zst | jq -c .event.event_id | wc -l', :'d1'))::int,
          :acc1, 'zstdcat | jq reads one JSON object per accepted record');
SELECT is(kl_test.sh(format('zstdcat %1$s/accepted.jsonl.zst | cmp - %2$s/accepted.jsonl && echo same', :'d1', :'p1')),
          'same', 'its lines are byte for byte the plain batch''s accepted.jsonl');
SELECT is(kl_test.sh(format('zstdcat %s/accepted.jsonl.zst | wc -c', :'d1'))::bigint, :raw1::bigint,
          'the catalog''s raw size is what zstdcat gives');
SELECT is(split_part(kl_test.sh(format('sha256sum %s/accepted.jsonl.zst', :'d1')), ' ', 1), :'sha1',
          'sha256sum of the file on disk is the catalog''s');
SELECT is(kl_test.sh(format('zstdcat %s/manifest.json.zst | jq -r ''.compression, .files["accepted.jsonl.zst"].raw_bytes, (.entries | length)''', :'d1')),
          format(E'zstd\n%s\n%s', :raw1, (SELECT record_count FROM kafka_lake.batches WHERE source_id = :zid AND batch_id = :'b1')),
          'the manifest reads with zstdcat | jq: compression, raw sizes, one entry per record');

-- readers: the same rows from both sources
SELECT is(pg_temp.records_md5('zst42'), pg_temp.records_md5('zst42p'),
          'the foreign table reads the compressed source as the plain one, record for record');
SELECT is((SELECT count(*)::int FROM kafka_lake.zst42_records WHERE status = 'quarantined'),
          (SELECT count(*)::int FROM kafka_lake.zst42p_records WHERE status = 'quarantined'),
          'quarantined records read back too');
SELECT ok((SELECT count(*) FROM kafka_lake.zst42_records WHERE status = 'duplicate_event_id') > 0,
          'duplicates read back too');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('zst42')), 0, 'verify() finds nothing wrong');

\o /dev/null
CREATE TEMP TABLE zst42_bridge AS SELECT * FROM kafka_lake.bridge('zst42', '2026-06-29');
CREATE TEMP TABLE zst42p_bridge AS SELECT * FROM kafka_lake.bridge('zst42p', '2026-06-29');
\o
SELECT is((SELECT run_status FROM zst42_bridge), (SELECT run_status FROM zst42p_bridge),
          'the compressed source bridges as the plain one');
SELECT ok((SELECT selected_events > 0 AND gold_rows > 0 FROM zst42_bridge), 'with events and gold rows');
SELECT is((SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM
             (SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms
                FROM kafka_lake.gold_current WHERE source = 'zst42') t),
          (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM
             (SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms
                FROM kafka_lake.gold_current WHERE source = 'zst42p') t),
          'its gold is the plain source''s');
SELECT is((SELECT source_hash FROM zst42_bridge), (SELECT source_hash FROM zst42p_bridge),
          'with the same source_hash');

-- damage, three ways, on the compressed source
SELECT kl_test.landing('zst42') || '/topic=zst42.events/partition=1/batch=' || batch_id AS d2, batch_id AS b2,
       lead(batch_id) OVER () AS b3,
       kl_test.landing('zst42') || '/topic=zst42.events/partition=1/batch=' || lead(batch_id) OVER () AS d3,
       lead(batch_id, 2) OVER () AS b4,
       kl_test.landing('zst42') || '/topic=zst42.events/partition=1/batch=' || lead(batch_id, 2) OVER () AS d4
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'zst42' AND partition = 1 ORDER BY first_offset LIMIT 1 \gset
\o /dev/null
SELECT kl_test.sh(format('printf X | dd of=%s/accepted.jsonl.zst bs=1 seek=20 conv=notrunc 2>/dev/null', :'d2'));
SELECT kl_test.sh(format('truncate -s -1 %s/accepted.jsonl.zst', :'d3'));
-- another valid frame, of other lines, and the catalog told its size and CRC-32C
SELECT kl_test.sh(format('printf ''{"a": 1}\n'' | zstd -q -c > %1$s/accepted.jsonl.zst.new && mv %1$s/accepted.jsonl.zst.new %1$s/accepted.jsonl.zst', :'d4'));
UPDATE kafka_lake.batches SET file_bytes[1] = length(pg_read_binary_file(:'d4' || '/accepted.jsonl.zst')),
       file_crc32c[1] = kl_test.crc32c(pg_read_binary_file(:'d4' || '/accepted.jsonl.zst'))
 WHERE source_id = :zid AND batch_id = :'b4';
\o
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.zst42_records WHERE batch_id = %L', :'b2')),
               format('^XX001\nfile accepted.jsonl.zst of batch %s of source "zst42" does not match its manifest\nDETAIL: Its CRC-32C differs from its manifest''s: its bytes were edited.', :'b2'),
               'an edited byte of a compressed file: XX001, its CRC-32C');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.zst42_records WHERE batch_id = %L', :'b3')),
               format('^XX001\nfile accepted.jsonl.zst of batch %s of source "zst42" has \d+ bytes, its manifest says \d+\nDETAIL: The file was truncated after it was landed.', :'b3'),
               'a truncated compressed file: XX001');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.zst42_records WHERE batch_id = %L', :'b4')),
               format('^XX001\nfile accepted.jsonl.zst of batch %s of source "zst42" does not match its manifest\nDETAIL: It holds 9 bytes of lines, its manifest says \d+.', :'b4'),
               'another valid frame with the catalog''s checks made to match: XX001, by its lines');
SELECT results_eq(
  format($$SELECT batch_id, file, problem FROM kafka_lake.verify('zst42') WHERE batch_id IN (%L, %L, %L) ORDER BY batch_id$$, :'b2', :'b3', :'b4'),
  format($$VALUES (%L, 'accepted.jsonl.zst', 'checksum_mismatch'), (%L, 'accepted.jsonl.zst', 'size_mismatch'),
                  (%L, 'accepted.jsonl.zst', 'checksum_mismatch')$$, :'b2', :'b3', :'b4'),
  'verify() names each damaged compressed file (the replaced frame by its SHA-256)');
SELECT is(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.zst42_records WHERE batch_id = %L', :'b1')),
          'no error', 'an intact compressed batch still reads');

-- a frame that would uncompress to more than the catalog says (10 MB of zeros in
-- a few hundred bytes), bytes that are no frame, both with the catalog's size and
-- CRC-32C made to match; and a symbolic link in place of a compressed file
SELECT kl_test.landing('zst42') || '/topic=zst42.events/partition=0/batch=' || batch_id AS d7, batch_id AS b7,
       lead(batch_id) OVER () AS b8,
       kl_test.landing('zst42') || '/topic=zst42.events/partition=0/batch=' || lead(batch_id) OVER () AS d8
  FROM kafka_lake.batches b WHERE source_id = :zid AND partition = 0 ORDER BY first_offset OFFSET 1 LIMIT 1 \gset
SELECT kl_test.landing('zst42') || '/topic=zst42.events/partition=1/batch=' || batch_id AS d9, batch_id AS b9
  FROM kafka_lake.batches b WHERE source_id = :zid AND partition = 1 ORDER BY first_offset OFFSET 3 LIMIT 1 \gset
\o /dev/null
SELECT kl_test.sh(format('head -c 10000000 /dev/zero | zstd -q -c > %1$s/bomb && mv %1$s/bomb %1$s/accepted.jsonl.zst', :'d7'));
SELECT kl_test.sh(format('printf ''not a zstd frame at all\n'' > %1$s/junk && mv %1$s/junk %1$s/accepted.jsonl.zst', :'d8'));
UPDATE kafka_lake.batches SET file_bytes[1] = length(pg_read_binary_file(d || '/accepted.jsonl.zst')),
       file_crc32c[1] = kl_test.crc32c(pg_read_binary_file(d || '/accepted.jsonl.zst'))
  FROM (VALUES (:'b7', :'d7'), (:'b8', :'d8')) v(b, d)
 WHERE source_id = :zid AND batch_id = v.b;
-- (the last batch of partition 1 holds the re-sent events: duplicates only)
SELECT kl_test.sh(format('rm %1$s/duplicates.jsonl.zst && ln -s /etc/passwd %1$s/duplicates.jsonl.zst', :'d9'));
\o
SELECT ok(length(pg_read_binary_file(:'d7' || '/accepted.jsonl.zst')) < 2000, 'the planted frame is small');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.zst42_records WHERE batch_id = %L', :'b7')),
               format('^XX001\nfile accepted.jsonl.zst of batch %s of source "zst42" does not match its manifest\nDETAIL: Its zstd frame cannot be uncompressed: Destination buffer is too small.', :'b7'),
               'a frame of more lines than the catalog says is refused, never uncompressed past them');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.zst42_records WHERE batch_id = %L', :'b8')),
               format('^XX001\nfile accepted.jsonl.zst of batch %s of source "zst42" does not match its manifest\nDETAIL: Its zstd frame cannot be uncompressed: ', :'b8'),
               'bytes that are no zstd frame: XX001');
SELECT matches(pg_temp.error_of(format('SELECT count(*) FROM kafka_lake.zst42_records WHERE batch_id = %L', :'b9')),
               format('^XX001\nfile duplicates.jsonl.zst of batch %s of source "zst42" is not a regular file', :'b9'),
               'a symbolic link in place of a compressed file is never followed: XX001');
SELECT matches(pg_temp.error_of($$SELECT * FROM kafka_lake.bridge('zst42', '2026-06-29', recheck => true)$$),
               '^XX001\n', 'the bridge refuses the damaged compressed batches too');

-- recover() adopts a compressed batch the catalog lost
\o /dev/null
SELECT batch_id AS b5, file_sha256 AS sha5, manifest_sha256 AS msha5, file_raw_bytes AS raw5
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'zst42' AND partition = 0 ORDER BY first_offset DESC LIMIT 1 \gset
DELETE FROM kafka_lake.batches WHERE source_id = :zid AND batch_id = :'b5';
SELECT * FROM kafka_lake.recover('zst42');
\o
SELECT is((SELECT row(compression, file_sha256, manifest_sha256, file_raw_bytes)::text FROM kafka_lake.batches
            WHERE source_id = :zid AND batch_id = :'b5'),
          row('zstd', :'sha5'::text[], :'msha5', :'raw5'::bigint[])::text,
          'recover() adopts a compressed batch from its manifest.json.zst, as it was');

-- compact(): a plain source's batches, merged after set_compression(zstd), are compressed
\o /dev/null
SELECT kafka_lake.set_compression('zst42p', 'zstd');
SELECT pg_temp.records_md5('zst42p') AS before_compact \gset
SELECT * FROM kafka_lake.compact('zst42p', target_records => 1000);
\o
SELECT is((SELECT count(*)::int || ' ' || count(*) FILTER (WHERE b.compression = 'zstd') FROM kafka_lake.batches b
             JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'zst42p'), '2 2',
          'compact() writes the merged batches as the source writes now: compressed');
SELECT is(pg_temp.records_md5('zst42p'), :'before_compact', 'the compacted source reads the same records');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('zst42p')), 0, 'verify() finds nothing wrong in them');

-- expire(): the record files go, the compressed manifest stays
\o /dev/null
SELECT kl_test.landing('zst42p') || '/topic=zst42.events/partition=0/batch=' || batch_id AS d6
  FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'zst42p' AND partition = 0 \gset
SELECT * FROM kafka_lake.expire('zst42p', before => '2026-07-01');
\o
SELECT is(kl_test.sh(format('ls %s', :'d6')), E'EXPIRED\nmanifest.json.zst',
          'expire() removes the .zst record files and keeps manifest.json.zst');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify('zst42p')), 0, 'verify() finds nothing wrong after expiry');

-- set_compression: what it refuses
SELECT throws_ok($$SELECT kafka_lake.set_compression('zst42', 'gzip')$$, '22023',
                 'unknown compression "gzip"', 'an unknown compression: 22023');
SELECT throws_ok($$SELECT kafka_lake.set_compression('zst42', NULL)$$, '22004', NULL,
                 'a NULL compression: 22004');
SELECT throws_ok($$SELECT kafka_lake.set_compression('nope42', 'zstd')$$, '42704', NULL,
                 'an unknown source: 42704');
CREATE ROLE zst42_reader;
GRANT USAGE ON SCHEMA kafka_lake TO zst42_reader;
SET ROLE zst42_reader;
SELECT throws_ok($$SELECT kafka_lake.set_compression('zst42', 'none')$$, '42501', NULL,
                 'a plain role may not set a source''s compression');
RESET ROLE;
SELECT is((SELECT compression FROM kafka_lake.sources WHERE source = 'zst42'), 'zstd',
          'and the source is as it was');
SELECT ok(NOT has_function_privilege('public', 'kafka_lake.set_compression(text, text)', 'EXECUTE'),
          'PUBLIC may not run set_compression');
REVOKE USAGE ON SCHEMA kafka_lake FROM zst42_reader;
DROP ROLE zst42_reader;
SELECT ok(NOT EXISTS (SELECT 1 FROM kafka_lake.batches WHERE compression IS NOT NULL AND
                        (file_raw_bytes[1] < 0 OR cardinality(file_raw_bytes) <> 3)),
          'every compressed batch row holds three raw sizes');

SELECT * FROM finish();
