-- test/pgtap/90_compact.sql: compact() merges 1,000 small batches into one per partition, and
-- every query result (but batch_id), every coordinate with its fingerprint and status, every
-- source_hash and verify() stay as they were; the new manifest lists every coordinate with its
-- original fingerprint and status; a demoted coordinate ('D') stays demoted; redelivered
-- coordinates are still reused; runs stop at gaps, expired batches and other dates; a rollback
-- leaves the old batches.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(41);

\o /dev/null
SELECT kl_test.broker('create c90.t 2');
SELECT kl_test.server('c90_kafka');
-- 1,000 events of 2026-06-29, 600 of 2026-06-30, every 7th cut in half (quarantined), then
-- 400 events again (duplicate event_ids): 2,000 records, landed 2 a batch
SELECT kl_test.fill('c90.t', 1000, 2, 1, '--bad-every 7');
SELECT kl_test.fill('c90.t', 600, 2, 1001, '--date 2026-06-30 --bad-every 7');
SELECT kl_test.fill('c90.t', 400, 2, 1);
SELECT kafka_lake.create_source('c90', 'c90_kafka', 'c90.t');
SELECT kafka_lake.set_compression('c90', 'none');  -- plain JSONL: the test reads the files' bytes
SET kafka_lake.batch_max_records = 2;
SELECT * FROM kafka_lake.land('c90', timeout => '5 min');
RESET kafka_lake.batch_max_records;
\o
SELECT source_id AS sid FROM kafka_lake.sources WHERE source = 'c90' \gset
SELECT kl_test.landing('c90') AS landing \gset

SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid), 1000::bigint,
          '2,000 records landed in 1,000 batches of 2');
SELECT results_eq($$SELECT status, count(*)::int FROM kafka_lake.c90_records GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('accepted', 1429), ('duplicate_event_id', 343), ('quarantined', 228)$$,
                  'accepted, duplicate and quarantined records among them');

-- what must not change
CREATE TABLE c90_rows_before AS
  SELECT topic, partition, "offset", key, timestamp_ms, fingerprint, status, event_id,
         business_date, event, raw_value, validation_error
  FROM kafka_lake.c90_records;
CREATE TABLE c90_coords_before AS
  SELECT partition, "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = 'c90';
CREATE TABLE c90_accepted_before AS
  SELECT event_key, partition, "offset" FROM kafka_lake.accepted_events WHERE source_id = :sid;
CREATE FOREIGN TABLE c90_typed (event_id text, business_date date, line_id text,
                                units_produced int, defect_count int, "partition" int, "offset" bigint)
  SERVER c90_kafka OPTIONS (source 'c90', status 'accepted');
CREATE TABLE c90_sums_before AS
  SELECT business_date, line_id, sum(units_produced) AS units, sum(defect_count) AS defects, count(*) AS n
  FROM c90_typed GROUP BY 1, 2;
CREATE TABLE c90_bridge_before AS
  SELECT v.d, b.* FROM (VALUES ('2026-06-29'::date), ('2026-06-30')) v(d), kafka_lake.bridge('c90', v.d) b;
SELECT is_empty($$SELECT * FROM kafka_lake.verify('c90')$$, 'verify() is clean before compaction');

-- a rollback keeps the old batches and leaves nothing on disk
BEGIN;
SELECT is((SELECT count(*) FROM kafka_lake.compact('c90', target_records => 100000)), 2::bigint,
          'inside a transaction: one new batch per partition');
ROLLBACK;
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid), 1000::bigint,
          'after ROLLBACK the catalog lists the 1,000 batches');
SELECT is((SELECT count(*) FROM pg_ls_dir(:'landing' || '/topic=c90.t/partition=0') d) +
          (SELECT count(*) FROM pg_ls_dir(:'landing' || '/topic=c90.t/partition=1') d), 1000::bigint,
          'and the disk holds exactly those 1,000 batch directories');
SELECT is((SELECT count(*) FROM pg_ls_dir(:'landing' || '/.staging') d), 0::bigint, 'and no staging directory');

-- compaction
CREATE TABLE c90_compacted AS
  SELECT * FROM kafka_lake.compact('c90', target_records => 100000);
SELECT results_eq($$SELECT partition, status, batches, records FROM c90_compacted ORDER BY partition$$,
                  $$VALUES (0, 'compacted', 500, 1000), (1, 'compacted', 500, 1000)$$,
                  'compact() makes one batch of 500 per partition');
SELECT results_eq($$SELECT partition, batch_id, landed_by, first_offset, last_offset, record_count,
                           cardinality(compacted_from)
                    FROM kafka_lake.batches WHERE source_id = $$ || :sid || $$ ORDER BY partition$$,
                  $$SELECT partition, batch_id, 'compact'::text, first_offset, last_offset, records, 500
                    FROM c90_compacted ORDER BY partition$$,
                  'the catalog lists the two compacted batches and what each replaced');
SELECT is((SELECT count(*) FROM pg_ls_dir(:'landing' || '/topic=c90.t/partition=0') d) +
          (SELECT count(*) FROM pg_ls_dir(:'landing' || '/topic=c90.t/partition=1') d), 2::bigint,
          'the old directories were removed at commit: two batch directories are left');
SELECT ok((SELECT bool_and(c.batch_id ~ ('^' || lpad(c.first_offset::text, 20, '0') || '-' ||
                                          lpad(c.last_offset::text, 20, '0') || '-[0-9a-f]{12}$'))
           FROM c90_compacted c), 'a compacted batch is named like any batch');
SELECT ok((SELECT bool_and(substr(c.batch_id, 43) =
                           substr(encode(sha256(co.fingerprints), 'hex'), 1, 12))
           FROM c90_compacted c JOIN kafka_lake.coordinates co ON co.source_id = :sid AND co.batch_id = c.batch_id),
          'its hash12 is that of its fingerprints in offset order, as landing names a batch');

SELECT set_eq($$SELECT partition, "offset", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = 'c90'$$,
              'SELECT * FROM c90_coords_before', 'every coordinate keeps its fingerprint and status');
SELECT set_eq($$SELECT event_key, partition, "offset" FROM kafka_lake.accepted_events WHERE source_id = $$ || :sid,
              'SELECT * FROM c90_accepted_before', 'accepted_events is unchanged');
SELECT set_eq($$SELECT topic, partition, "offset", key, timestamp_ms, fingerprint, status, event_id,
                       business_date, event::text, raw_value, validation_error FROM kafka_lake.c90_records$$,
              $$SELECT topic, partition, "offset", key, timestamp_ms, fingerprint, status, event_id,
                       business_date, event::text, raw_value, validation_error FROM c90_rows_before$$,
              'every row of the foreign table reads the same (but batch_id)');
SELECT results_eq($$SELECT partition, "offset" FROM kafka_lake.c90_records WHERE status = 'accepted'$$,
                  $$SELECT partition, "offset" FROM c90_rows_before WHERE status = 'accepted' ORDER BY 1, 2$$,
                  'in the same order');
SELECT set_eq($$SELECT business_date, line_id, sum(units_produced) AS u, sum(defect_count) AS d, count(*) AS n FROM c90_typed GROUP BY 1, 2$$,
              'SELECT * FROM c90_sums_before', 'a typed table sums the same');
SELECT is((SELECT count(*) FROM kafka_lake.c90_records WHERE partition = 1 AND "offset" BETWEEN 100 AND 199
                                                       AND status = 'accepted'),
          (SELECT count(*) FROM c90_rows_before WHERE partition = 1 AND "offset" BETWEEN 100 AND 199
                                                  AND status = 'accepted'),
          'a pruned query reads the same rows');
SELECT is((SELECT count(*) FROM kafka_lake.c90_records WHERE status = 'quarantined' AND raw_value IS NOT NULL), 228::bigint,
          'quarantined records keep their bytes');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('c90')$$, 'verify() is clean after compaction');
SELECT is_empty($$SELECT * FROM kafka_lake.recover('c90')$$, 'recover() has nothing to do');

-- the bridge sees the same bytes
SELECT results_eq($$SELECT b.source_hash, b.selected_events, b.adapter_status, b.run_status
                    FROM (VALUES ('2026-06-29'::date), ('2026-06-30')) v(d), kafka_lake.bridge('c90', v.d) b ORDER BY v.d$$,
                  $$SELECT source_hash, selected_events, 'reused'::text, 'skipped'::text FROM c90_bridge_before ORDER BY d$$,
                  'each date bridges to the same source_hash: adapter reused, run skipped');

-- the manifest lists every coordinate with its original fingerprint and status
SELECT set_eq(format($$SELECT (e->>'partition')::int AS p, (e->>'offset')::bigint AS o, e->>'status' AS s,
                              e->>'fingerprint' AS f
                       FROM c90_compacted c,
                            json_array_elements(pg_read_file(%L || '/topic=c90.t/partition=' || c.partition ||
                                                '/batch=' || c.batch_id || '/manifest.json')::json->'entries') e$$,
                     :'landing'),
              'SELECT * FROM c90_coords_before',
              'the compacted manifests list every coordinate with its original fingerprint and status');
SELECT ok((SELECT bool_and(json_array_length(m->'compacted_from') = 500 AND (m->>'new_coordinate_count')::int = 1000
                           AND m->>'batch_id' = c.batch_id)
           FROM c90_compacted c,
                LATERAL (SELECT pg_read_file(:'landing' || '/topic=c90.t/partition=' || c.partition ||
                                             '/batch=' || c.batch_id || '/manifest.json')::json AS m) x),
          'and names the 500 batches it replaced');

-- redelivery is reused; landing goes on; a second compaction merges the new batches in
SELECT results_eq($$SELECT status, reused FROM kafka_lake.replay('c90', 0, 10, 19)$$,
                  $$VALUES ('reused', 10)$$, 'replay() of compacted coordinates finds them reused');
\o /dev/null
SELECT kl_test.fill('c90.t', 20, 2, 2001);
SET kafka_lake.batch_max_records = 5;
SELECT * FROM kafka_lake.land('c90');
RESET kafka_lake.batch_max_records;
\o
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :sid), 6::bigint,
          'land() goes on after the compacted batches: two batches of 5 per partition');
SELECT results_eq($$SELECT partition, batches, records FROM kafka_lake.compact('c90', target_records => 2000) ORDER BY 1$$,
                  $$VALUES (0, 2, 10), (1, 2, 10)$$,
                  'a batch at least half the target is left as it is: the two new ones are merged');
SELECT results_eq($$SELECT partition, batches, records FROM kafka_lake.compact('c90', target_records => 100000) ORDER BY 1$$,
                  $$VALUES (0, 2, 1010), (1, 2, 1010)$$,
                  'with a larger target, the compacted batches merge again');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'c90'), 2020::bigint,
          'every coordinate once');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('c90')$$, 'verify() is clean');

-- one business date at a time, and runs end at a gap
\o /dev/null
SELECT kafka_lake.create_source('c90d', 'c90_kafka', 'c90.t');
SELECT kafka_lake.set_compression('c90d', 'none');  -- plain JSONL: the test reads the files' bytes
SET kafka_lake.batch_max_records = 100;
SELECT * FROM kafka_lake.land('c90d', timeout => '5 min');
RESET kafka_lake.batch_max_records;
\o
SELECT source_id AS did FROM kafka_lake.sources WHERE source = 'c90d' \gset
SELECT results_eq($$SELECT partition, batches, first_offset, last_offset
                    FROM kafka_lake.compact('c90d', business_date => '2026-06-29') ORDER BY 1, 3$$,
                  $$VALUES (0, 5, 0::bigint, 499::bigint), (0, 3, 800, 1009), (1, 5, 0, 499), (1, 3, 800, 1009)$$,
                  'business_date => compacts the runs of batches of that date alone');
SELECT is((SELECT count(*) FROM kafka_lake.batches WHERE source_id = :did AND max_business_date = '2026-06-30'
                                                     AND min_business_date = '2026-06-30'),
          (SELECT count(*) FROM kafka_lake.batches WHERE source_id = :did AND landed_by = 'land'
                                                     AND max_business_date = '2026-06-30'
                                                     AND min_business_date = '2026-06-30'),
          'batches of the other date are left as they were');
-- a gap: forget one batch in the middle, then compact
SELECT batch_id AS gap_batch FROM kafka_lake.batches
 WHERE source_id = :did AND partition = 0 AND landed_by = 'land' ORDER BY first_offset OFFSET 2 LIMIT 1 \gset
SELECT kl_test.sh(format('mv %s/topic=c90.t/partition=0/batch=%s %s/c90d-gap', kl_test.landing('c90d'), :'gap_batch',
                         current_setting('data_directory')));
SELECT is((SELECT count(*) FROM kafka_lake.recover('c90d') WHERE action = 'forgotten'), 1::bigint,
          '(a batch in the middle is forgotten: its offsets are a gap that replay() can fill)');
SELECT cmp_ok((SELECT count(*) FROM kafka_lake.compact('c90d', partition => 0)), '>=', 1::bigint,
              'compaction of the partition goes on around the gap');
SELECT is((SELECT count(*) FROM kafka_lake.batches b WHERE source_id = :did AND partition = 0
             AND b.first_offset < split_part(:'gap_batch', '-', 1)::bigint
             AND b.last_offset > split_part(:'gap_batch', '-', 2)::bigint), 0::bigint,
          'no compacted batch spans the gap');
SELECT results_eq(format($$SELECT status, records FROM kafka_lake.replay('c90d', 0, %s, %s)$$,
                         split_part(:'gap_batch', '-', 1)::bigint, split_part(:'gap_batch', '-', 2)::bigint),
                  $$VALUES ('landed', 100)$$, 'replay() fills the gap');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('c90d')$$, 'verify() is clean');
SELECT kl_test.sh(format('rm -rf %s/c90d-gap', current_setting('data_directory'))) \g /dev/null

-- a demoted coordinate ('D': accepted on disk, its event_id accepted elsewhere first) stays demoted
\o /dev/null
SELECT kl_test.broker('create c90x.t 2');
SELECT kafka_lake.create_source('c90x', 'c90_kafka', 'c90x.t');
SELECT kafka_lake.set_compression('c90x', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.produce('c90_kafka', 'c90x.t', kl_test.event('evt-c90x-' || n), partition => 0)
  FROM generate_series(1, 2) n;
SELECT * FROM kafka_lake.land('c90x');
SELECT kafka_lake.produce('c90_kafka', 'c90x.t', kl_test.event('evt-c90x-d'), partition => 0);
SELECT * FROM kafka_lake.land('c90x');
SELECT kafka_lake.produce('c90_kafka', 'c90x.t', kl_test.event('evt-c90x-3'), partition => 0);
SELECT * FROM kafka_lake.land('c90x');
\o
SELECT source_id AS xid FROM kafka_lake.sources WHERE source = 'c90x' \gset
-- the catalog loses the middle batch and its event_id; the same event_id lands in partition 1
DELETE FROM kafka_lake.accepted_events WHERE event_key = kafka_lake.event_key('c90x', 'evt-c90x-d');
DELETE FROM kafka_lake.batches WHERE source_id = :xid AND first_offset = 2;
\o /dev/null
SELECT kafka_lake.produce('c90_kafka', 'c90x.t', kl_test.event('evt-c90x-d'), partition => 1);
SELECT * FROM kafka_lake.replay('c90x', 1, 0, 0);
SELECT * FROM kafka_lake.recover('c90x');
\o
SELECT is((SELECT string_agg(statuses, '|' ORDER BY lower(offsets)) FROM kafka_lake.coordinates
           WHERE source_id = :xid AND partition = 0), 'aa|D|a', '(partition 0: one coordinate demoted)');
SELECT results_eq($$SELECT batches, records FROM kafka_lake.compact('c90x', partition => 0)$$,
                  $$VALUES (3, 4)$$, 'the three batches are compacted');
SELECT is((SELECT statuses FROM kafka_lake.coordinates WHERE source_id = :xid AND partition = 0), 'aaDa',
          'the compacted coordinates keep the demotion');
SELECT results_eq($$SELECT "offset", status FROM kafka_lake.c90x_records WHERE partition = 0 ORDER BY 1$$,
                  $$VALUES (0::bigint, 'accepted'), (1, 'accepted'), (2, 'duplicate_event_id'), (3, 'accepted')$$,
                  'and it still reads as a duplicate');

DROP TABLE c90_rows_before, c90_coords_before, c90_accepted_before, c90_sums_before, c90_bridge_before,
           c90_compacted;
DROP FOREIGN TABLE c90_typed;
SELECT * FROM finish();
