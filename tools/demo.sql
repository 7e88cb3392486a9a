-- tools/demo.sql -- the main job: the seed scenario (README: Getting started), through SQL alone,
-- then step 8: the date is closed with a completeness certificate (its gold provisional until then).
-- Run by tools/demo on a throwaway cluster and the test broker (psql variable :bootstrap).
\set ON_ERROR_STOP 1
\set QUIET on
\pset footer off
SET client_min_messages = warning;

\echo
\echo '== set up: the extension, a server for the Kafka cluster, a source =='
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
CREATE SERVER plant_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(source   => 'machine_events',
                                server   => 'plant_kafka',
                                topic    => 'manufacturing.machine-events.v1',
                                group_id => 'kafka-lake-machine-events',
                                contract => 'machine_event_v1') \g /dev/null
\d kafka_lake.machine_events_records
CREATE TEMP TABLE evidence (n serial, item text, value text);

-- one machine_event_v1 value
CREATE FUNCTION pg_temp.event(seq int, units int, defects int) RETURNS bytea LANGUAGE sql AS $$
  SELECT convert_to(json_build_object(
    'event_id', format('evt-20260629-%s', lpad(seq::text, 6, '0')), 'schema_version', 1,
    'event_time', format('2026-06-29T08:%s:00+09:00', lpad((seq * 5)::text, 2, '0')),
    'business_date', '2026-06-29', 'plant_id', 'PLANT-01', 'line_id', 'LINE-A',
    'work_order_id', 'WO-1001', 'machine_id', 'MC-01', 'product_code', 'PRD-100',
    'operation', 'assembly', 'units_produced', units, 'defect_count', defects,
    'cycle_time_ms', 4000 + seq * 100)::text, 'UTF8')
$$;

\echo
\echo '== step 1: produce 3 valid events, land them =='
SELECT kafka_lake.produce('plant_kafka', 'manufacturing.machine-events.v1',
                          pg_temp.event(n, n * 10, n - 1), key => convert_to('MC-01', 'UTF8')) AS "offset"
FROM generate_series(1, 3) AS n;
SELECT status, records, accepted, quarantined, first_offset, last_offset, committed_offset
FROM kafka_lake.land('machine_events');

\echo
\echo '== step 2: produce event 4; the landing crashes after the batch is durable, before the commit =='
SELECT kafka_lake.produce('plant_kafka', 'manufacturing.machine-events.v1',
                          pg_temp.event(4, 40, 3), key => convert_to('MC-01', 'UTF8')) AS "offset";
SET kafka_lake.fault_injection = 'after_landing_before_commit';
DO $$
BEGIN
  PERFORM * FROM kafka_lake.land('machine_events');
  INSERT INTO evidence (item, value) VALUES ('injected crash', 'not observed');
EXCEPTION WHEN internal_error THEN
  RAISE WARNING 'land failed as injected: %', SQLERRM;
  INSERT INTO evidence (item, value) VALUES ('injected crash', 'observed: ' || SQLERRM);
END $$;
RESET kafka_lake.fault_injection;
SELECT committed_offset AS "group offset after the crash" FROM kafka_lake.lag('machine_events');

\echo
\echo '== step 3: land again: the redelivered record is reused, not accepted twice =='
SELECT status, records, accepted, reused, committed_offset FROM kafka_lake.land('machine_events') \gset step3_
SELECT :'step3_status' AS status, :'step3_reused' AS reused, :'step3_committed_offset' AS committed_offset;
INSERT INTO evidence (item, value) VALUES
  ('recovery landing status', :'step3_status'),
  ('redelivered coordinates reused', :'step3_reused'),
  ('committed next offset after recovery', :'step3_committed_offset');

\echo
\echo '== step 4: bounded replay of offsets 0..3: reused, and the group offset does not move =='
SELECT status, records, reused, committed_offset AS group_offset
FROM kafka_lake.replay('machine_events', partition => 0, from_offset => 0, to_offset => 3) \gset step4_
SELECT :'step4_status' AS status, :'step4_reused' AS reused, :'step4_group_offset' AS group_offset;
INSERT INTO evidence (item, value)
SELECT 'replay 0..3: reused coordinates', :'step4_reused'
UNION ALL
SELECT 'group offset after replay (commit not performed)', committed_offset::text FROM kafka_lake.lag('machine_events');

\echo
\echo '== step 5: an event that breaks the contract is quarantined; the offset still advances =='
SELECT kafka_lake.produce('plant_kafka', 'manufacturing.machine-events.v1',
                          convert_to('{"event_id":"invalid-contract-event"}', 'UTF8'),
                          key => convert_to('MC-01', 'UTF8')) AS "offset";
SELECT status, records, quarantined, committed_offset FROM kafka_lake.land('machine_events');
SELECT "offset", status, validation_error, raw_value
FROM kafka_lake.machine_events_records WHERE status = 'quarantined';

\echo
\echo '== step 6: what landed (the foreign table over the landed JSONL) =='
SELECT "offset", status, event_id, business_date, (event ->> 'units_produced')::int AS units,
       (event ->> 'defect_count')::int AS defects, left(batch_id, 20) || '...' AS batch
FROM kafka_lake.machine_events_records ORDER BY "offset";
INSERT INTO evidence (item, value)
SELECT 'produced coordinates', (SELECT high_watermark FROM kafka_lake.lag('machine_events'))::text
UNION ALL SELECT 'persisted coordinates', count(*)::text FROM kafka_lake.coordinate_list WHERE source = 'machine_events'
UNION ALL SELECT 'accepted events', count(*)::text FROM kafka_lake.coordinate_list
          WHERE source = 'machine_events' AND status = 'accepted'
UNION ALL SELECT 'quarantined events', count(*)::text FROM kafka_lake.coordinate_list
          WHERE source = 'machine_events' AND status = 'quarantined'
UNION ALL SELECT 'batches', count(*)::text FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
          WHERE s.source = 'machine_events'
UNION ALL SELECT 'committed next offset', committed_offset::text FROM kafka_lake.lag('machine_events')
UNION ALL SELECT 'verify: problems found', count(*)::text FROM kafka_lake.verify('machine_events');

\echo
\echo '== step 7: bridge 2026-06-29 into gold, twice =='
SELECT * FROM kafka_lake.bridge('machine_events', '2026-06-29') \gset b1_
SELECT * FROM kafka_lake.bridge('machine_events', '2026-06-29') \gset b2_
SELECT 'first' AS call, :'b1_selected_events' AS selected, :'b1_adapter_status' AS adapter,
       :'b1_run_status' AS run, :'b1_quality_passed' || '/' || :'b1_quality_total' AS quality,
       :'b1_silver_rows' AS silver, :'b1_gold_rows' AS gold, :'b1_snapshot_id' AS snapshot,
       :'b1_snapshot_status' AS snapshot_status
UNION ALL
SELECT 'second', :'b2_selected_events', :'b2_adapter_status', :'b2_run_status',
       :'b2_quality_passed' || '/' || :'b2_quality_total', :'b2_silver_rows', :'b2_gold_rows',
       :'b2_snapshot_id', :'b2_snapshot_status';
SELECT check_name, passed,
       CASE WHEN length(expected) > 40 THEN left(expected, 37) || '...' ELSE expected END AS expected,
       CASE WHEN length(observed) > 40 THEN left(observed, 37) || '...' ELSE observed END AS observed
FROM kafka_lake.quality_results WHERE run_id = :'b1_run_id' ORDER BY check_name;
SELECT business_date, plant_id, line_id, product_code, units_produced, defect_count, defect_rate,
       avg_cycle_time_ms, closing_status
FROM kafka_lake.gold_current;
INSERT INTO evidence (item, value) VALUES
  ('selected accepted events', :'b1_selected_events'),
  ('source_hash', :'b1_source_hash'),
  ('adapter', :'b1_adapter_status' || ' -> ' || :'b2_adapter_status'),
  ('run', :'b1_run_status' || ' -> ' || :'b2_run_status'),
  ('quality checks', :'b1_quality_passed' || ' / ' || :'b1_quality_total' || ' pass'),
  ('silver rows', :'b1_silver_rows'),
  ('gold rows', :'b1_gold_rows'),
  ('snapshot', :'b1_snapshot_status' || ' -> ' || :'b2_snapshot_status'),
  ('snapshot id unchanged', (:'b1_snapshot_id' = :'b2_snapshot_id')::text);
INSERT INTO evidence (item, value)
SELECT 'gold totals', format('units=%s, defects=%s', sum(units_produced), sum(defect_count))
FROM kafka_lake.gold_current
UNION ALL SELECT 'snapshot count', count(*)::text FROM kafka_lake.snapshots;

\echo
\echo '== evidence =='
SELECT item AS "what", value FROM evidence ORDER BY n;

\echo
\echo '== step 8: close 2026-06-29: every partition landed up to its mark, a certificate, gold closed =='
SELECT business_date, closing_status AS "gold before closing" FROM kafka_lake.gold_current;
SELECT closing_id, status, snapshot_id, selected_events, partitions
FROM kafka_lake.close_date('machine_events', '2026-06-29') \gset c8_
\echo 'the certificate:'
\x on
SELECT c.closing_id, s.source, c.business_date, c.status, c.snapshot_id, c.source_hash,
       c.selected_events, coalesce(c.cutoff::text, 'none (the high watermarks at the call)') AS cutoff,
       c.closed_by, c.closed_at
FROM kafka_lake.date_closings c JOIN kafka_lake.sources s USING (source_id)
WHERE c.closing_id = :c8_closing_id;
\x off
SELECT partition, through_offset AS "complete below offset", through_timestamp_ms,
       to_timestamp(through_timestamp_ms / 1000.0) AS "last record's timestamp"
FROM kafka_lake.date_closing_partitions WHERE closing_id = :c8_closing_id ORDER BY partition;
SELECT business_date, units_produced, defect_count, closing_status, snapshot_id FROM kafka_lake.gold_current;
SELECT status AS "closing again with nothing new", closing_id
FROM kafka_lake.close_date('machine_events', '2026-06-29');
SELECT partition, last_status, committed_offset, high_watermark, lag, batches, accepted, quarantined,
       oldest_open_date
FROM kafka_lake.source_status WHERE source = 'machine_events';
