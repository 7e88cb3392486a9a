-- test/pgtap/66_land_worker.sql: land() judges half of each window and writes each batch's files on
-- a helper thread while the backend reserves the event_ids.  An ERROR or a cancel on the backend
-- while the helper writes leaves no thread, loses nothing, and the next land() lands exactly what
-- a clean run lands; a batch whose statuses the catalog changes while its files are written is
-- written again (event_ids accepted by an earlier window or another partition).  Needs the broker.
SELECT plan(22);
SELECT kl_test.broker('create worker66.t 2');
SELECT kl_test.server('worker66_kafka');

-- 2 x 700 records: valid events, every 50th invalid (28), and event_ids that repeat across
-- windows and partitions: past n = 300, every 7th record of a partition repeats the id of record
-- n - 300 of the other one (112, each first accepted in partition 0: partition 1's copies are
-- demoted by the catalog, as is partition 1's original of each id partition 0 repeats)
SELECT count(kafka_lake.produce('worker66_kafka', 'worker66.t',
         CASE WHEN n % 50 = 0 THEN convert_to('{"not json', 'UTF8')
              WHEN n % 7 = 0 AND n > 300 THEN kl_test.event('evt-w66-' || ((n - 300) % 700 + 700 * (1 - p)))
              ELSE kl_test.event('evt-w66-' || (n + 700 * p)) END,
         partition => p))
  FROM generate_series(0, 1) p, generate_series(1, 700) n;

CREATE TEMP TABLE landed (source text, partition int, first_offset bigint, last_offset bigint,
  accepted int, duplicates int, quarantined int, files text[]);
CREATE FUNCTION pg_temp.remember(src text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO landed
  SELECT src, b.partition, b.first_offset, b.last_offset, b.accepted_count, b.duplicate_count,
         b.quarantine_count, b.file_sha256
    FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
   WHERE s.source = src $$;
CREATE FUNCTION pg_temp.same_as_clean(src text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    (SELECT partition, first_offset, last_offset, accepted, duplicates, quarantined, files
       FROM landed WHERE source = 'w66_clean'
     EXCEPT ALL
     SELECT partition, first_offset, last_offset, accepted, duplicates, quarantined, files
       FROM landed WHERE source = src)
    UNION ALL
    (SELECT partition, first_offset, last_offset, accepted, duplicates, quarantined, files
       FROM landed WHERE source = src
     EXCEPT ALL
     SELECT partition, first_offset, last_offset, accepted, duplicates, quarantined, files
       FROM landed WHERE source = 'w66_clean')) d $$;
CREATE FUNCTION pg_temp.sqlstate_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN query_canceled OR OTHERS THEN
  RETURN SQLSTATE;
END $$;

SET kafka_lake.batch_max_records = 300;
SELECT kl_test.threads() AS baseline \gset

-- the clean run
SELECT kafka_lake.create_source('w66_clean', 'worker66_kafka', 'worker66.t');
SELECT is((SELECT sum(records) FROM kafka_lake.land('w66_clean')), 1400::bigint, 'a clean land lands the 1,400 records');
SELECT pg_temp.remember('w66_clean');
SELECT is((SELECT array[sum(accepted), sum(duplicates), sum(quarantined)] FROM landed WHERE source = 'w66_clean'),
          array[1260, 112, 28]::bigint[],
          'each repeated event_id is a duplicate of the first copy, in whichever window or partition it came');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('w66_clean')$$, 'verify finds nothing wrong with the rewritten batches');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('w66_clean') || '/.staging')), 0::bigint,
  'the files written with statuses the catalog then changed left no staging directory');
SELECT is((SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'w66_clean'), 1260::bigint, 'accepted_events holds each accepted event_id once');

-- an ERROR on the backend while the helper writes
SELECT kafka_lake.create_source('w66_error', 'worker66_kafka', 'worker66.t');
SET kafka_lake.fault_injection = 'while_writing';
SELECT throws_ok($$SELECT * FROM kafka_lake.land('w66_error')$$, 'XX000',
  'kafka_lake fault injection: while_writing', 'an ERROR while the helper writes fails the land');
SELECT is(kl_test.threads(), :baseline::bigint, 'and leaves no thread behind');
RESET kafka_lake.fault_injection;
SELECT is((SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'w66_error'), 0::bigint, 'the failed land recorded nothing');
SELECT is((SELECT sum(records) FROM kafka_lake.land('w66_error')), 1400::bigint, 'the next land lands every record');
SELECT pg_temp.remember('w66_error');
SELECT is(pg_temp.same_as_clean('w66_error'), 0::bigint, 'the same batches, counts and file contents as the clean run');

-- a cancel while the helper writes
SELECT kafka_lake.create_source('w66_cancel', 'worker66_kafka', 'worker66.t');
SET kafka_lake.fault_injection = 'cancel_while_writing';
SELECT is(pg_temp.sqlstate_of($$SELECT * FROM kafka_lake.land('w66_cancel')$$), '57014',
  'a cancel while the helper writes cancels the land');
SELECT is(kl_test.threads(), :baseline::bigint, 'and leaves no thread behind');
RESET kafka_lake.fault_injection;
SELECT is((SELECT sum(records) FROM kafka_lake.land('w66_cancel')), 1400::bigint, 'the next land lands every record');
SELECT pg_temp.remember('w66_cancel');
SELECT is(pg_temp.same_as_clean('w66_cancel'), 0::bigint, 'the same batches as the clean run');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('w66_cancel') || '/.staging')), 0::bigint,
  'the abandoned staging directory was removed by the next land');

-- the same ERROR caught by a PL/pgSQL exception block (the helper runs inside its subtransaction)
SELECT kafka_lake.create_source('w66_caught', 'worker66_kafka', 'worker66.t');
SET kafka_lake.fault_injection = 'while_writing';
DO $$
BEGIN
  PERFORM * FROM kafka_lake.land('w66_caught');
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'caught %', SQLSTATE;
END $$;
SELECT is(kl_test.threads(), :baseline::bigint, 'an ERROR caught in a subtransaction leaves no thread behind');
RESET kafka_lake.fault_injection;
SELECT is((SELECT sum(records) FROM kafka_lake.land('w66_caught')), 1400::bigint, 'the next land lands every record');
SELECT pg_temp.remember('w66_caught');
SELECT is(pg_temp.same_as_clean('w66_caught'), 0::bigint, 'the same batches as the clean run');

-- the files a fault point after the helper's writing sees are complete
SELECT kafka_lake.create_source('w66_staged', 'worker66_kafka', 'worker66.t');
SET kafka_lake.fault_injection = 'after_staging_write';
SELECT throws_ok($$SELECT * FROM kafka_lake.land('w66_staged')$$, 'XX000', NULL,
  'a fault after the staging write fails the land');
RESET kafka_lake.fault_injection;
SELECT is((SELECT sum(records) FROM kafka_lake.land('w66_staged')), 1400::bigint, 'the next land lands every record');
SELECT pg_temp.remember('w66_staged');
SELECT is(pg_temp.same_as_clean('w66_staged'), 0::bigint, 'the same batches as the clean run');

SELECT ok(position('terminated by signal' IN kl_test.server_log()) = 0, 'no backend died on a signal');

RESET kafka_lake.batch_max_records;
SELECT kafka_lake.drop_source(s, drop_landing => true)
  FROM unnest(array['w66_clean', 'w66_error', 'w66_cancel', 'w66_caught', 'w66_staged']) s;
DROP SERVER worker66_kafka;
SELECT * FROM finish();
