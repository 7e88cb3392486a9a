-- test/pgtap/50_bridge.sql -- the date bridge on the seed scenario
--
-- Needs a running test broker: KL_BOOTSTRAP (its bootstrap address),
-- KL_BROKER (test/broker/kafka_lake_broker) and KL_BROKER_DIR (its --dir).
-- Self-contained and not wrapped in a transaction (landing is not
-- transactional): every run uses its own topic and source, named after the
-- clock, and drops its source at the end.
--
-- Reproduces the seed scenario through SQL alone: 3 valid events, a fourth
-- landed across an injected fault, a replay, an invalid event, then
-- bridge('2026-06-29') twice: created / processed / 8 of 8 / silver 4 /
-- gold 1 (units 100, defects 6) / published, then reused / skipped / the
-- same run and snapshot, no new snapshot.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test50.seed.' :tok
\set source 't50_seed_' :tok
\setenv KL_T50_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T50_TOPIC" 1 >/dev/null

DROP SERVER IF EXISTS t50_kafka CASCADE;
CREATE SERVER t50_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't50_kafka', :'topic') \g /dev/null

-- one seed event as the producer sends it
CREATE FUNCTION pg_temp.seed_event(n int, units int, defects int) RETURNS bytea
LANGUAGE sql AS $$
    SELECT convert_to(json_build_object(
        'event_id', format('evt-20260629-%s', lpad(n::text, 6, '0')),
        'schema_version', 1,
        'event_time', format('2026-06-29T%s:00:00+09:00', lpad((8 + n)::text, 2, '0')),
        'business_date', '2026-06-29',
        'plant_id', 'plant-01', 'line_id', 'line-01',
        'work_order_id', 'wo-20260629-001', 'machine_id', format('machine-%s', n),
        'product_code', 'prd-a', 'operation', 'assembly',
        'units_produced', units, 'defect_count', defects,
        'cycle_time_ms', 1000 * n)::text, 'UTF8')
$$;
CREATE FUNCTION pg_temp.machine_key(n int) RETURNS bytea
LANGUAGE sql AS $$ SELECT convert_to(format('machine-%s', n), 'UTF8') $$;

SELECT plan(37);

-- 1. three valid events, landed
SELECT is(array_agg(kafka_lake.produce('t50_kafka', :'topic', pg_temp.seed_event(n, 10 * n, n - 1),
                                       pg_temp.machine_key(n)) ORDER BY n),
          '{0,1,2}'::bigint[], 'seed 1: three events produced at offsets 0..2')
FROM generate_series(1, 3) n;
SELECT results_eq(
    format($$SELECT status, accepted, committed_offset FROM kafka_lake.land(%L)$$, :'source'),
    $$VALUES ('landed'::text, 3, 3::bigint)$$,
    'seed 1: land accepts 3 events and commits offset 3');

-- 2. the fourth event lands, then the call fails before its commit
SELECT is(kafka_lake.produce('t50_kafka', :'topic', pg_temp.seed_event(4, 40, 3), pg_temp.machine_key(4)),
          3::bigint, 'seed 2: the fourth event is at offset 3');
SET kafka_lake.fault_injection = 'after_landing_before_commit';
SELECT throws_ok(format($$SELECT * FROM kafka_lake.land(%L)$$, :'source'), 'XX000', NULL,
                 'seed 2: land fails after the batch is durable');
RESET kafka_lake.fault_injection;

-- 3. the redelivered coordinate is reused
SELECT results_eq(
    format($$SELECT status, reused, committed_offset FROM kafka_lake.land(%L)$$, :'source'),
    $$VALUES ('reused'::text, 1, 4::bigint)$$,
    'seed 3: land again reuses the durable coordinate and commits offset 4');

-- 4. a bounded replay reuses everything and commits nothing
SELECT is((SELECT sum(reused)::int FROM kafka_lake.replay(:'source', 0, 0, 3)), 4,
          'seed 4: replay 0..3 reuses 4 coordinates');
SELECT is((SELECT committed_offset FROM kafka_lake.lag(:'source')), 4::bigint,
          'seed 4: the group offset is still 4');

-- 5. an invalid event is quarantined
SELECT is(kafka_lake.produce('t50_kafka', :'topic', convert_to('{"event_id":"invalid-contract-event"}', 'UTF8')),
          4::bigint, 'seed 5: the invalid event is at offset 4');
SELECT results_eq(
    format($$SELECT quarantined, committed_offset FROM kafka_lake.land(%L)$$, :'source'),
    $$VALUES (1, 5::bigint)$$,
    'seed 5: land quarantines it and commits offset 5');

-- 6. totals
SELECT results_eq(
    format($$SELECT count(*)::int, count(*) FILTER (WHERE status = 'accepted')::int,
                    count(*) FILTER (WHERE status = 'quarantined')::int,
                    count(DISTINCT batch_id)::int
             FROM kafka_lake.%I$$, :'source' || '_records'),
    $$VALUES (5, 4, 1, 3)$$,
    'seed 6: 5 coordinates, 4 accepted, 1 quarantined, 3 batches');

-- 7. the bridge, twice
CREATE TEMP TABLE first_bridge AS SELECT * FROM kafka_lake.bridge(:'source', '2026-06-29');
CREATE TEMP TABLE second_bridge AS SELECT * FROM kafka_lake.bridge(:'source', '2026-06-29');

SELECT results_eq(
    $$SELECT business_date, selected_events, adapter_status, run_status, quality_passed,
             quality_total, silver_rows, gold_rows, snapshot_status FROM first_bridge$$,
    $$VALUES ('2026-06-29'::date, 4, 'created'::text, 'processed'::text, 8, 8, 4, 1,
              'published'::text)$$,
    'seed 7: first bridge: created / processed / 8 of 8 / silver 4 / gold 1 / published');
SELECT ok((SELECT source_hash ~ '^[0-9a-f]{64}$' AND run_id IS NOT NULL AND snapshot_id IS NOT NULL
           FROM first_bridge), 'seed 7: first bridge reports a source_hash, a run_id and a snapshot_id');
SELECT results_eq(
    format($$SELECT units_produced, defect_count, defect_rate, avg_cycle_time_ms, closing_status
             FROM kafka_lake.gold_current WHERE source = %L AND business_date = '2026-06-29'$$,
           :'source'),
    $$VALUES (100::bigint, 6::bigint, 0.060000::numeric, 2500.00::numeric, 'provisional'::text)$$,
    'seed 7: gold: units 100, defects 6, defect_rate 0.06, avg cycle 2500 ms, provisional');

SELECT results_eq(
    $$SELECT source_hash, selected_events, adapter_status, run_status, quality_passed,
             quality_total, silver_rows, gold_rows, snapshot_status FROM second_bridge$$,
    $$SELECT source_hash, 4, 'reused'::text, 'skipped'::text, 8, 8, 4, 1, 'skipped'::text
      FROM first_bridge$$,
    'seed 7: second bridge: reused / skipped, same source_hash');
SELECT is((SELECT run_id FROM second_bridge), (SELECT run_id FROM first_bridge),
          'seed 7: the skipped call reports the earlier run');
SELECT is((SELECT snapshot_id FROM second_bridge), (SELECT snapshot_id FROM first_bridge),
          'seed 7: the skipped call reports the same, still current snapshot');

SELECT is((SELECT count(*)::int FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id)
           WHERE source = :'source'), 1, 'snapshot count stays 1');
SELECT results_eq(
    format($$SELECT n.closing_status, (SELECT count(*)::int FROM kafka_lake.date_closings c WHERE c.source_id = n.source_id)
             FROM kafka_lake.snapshots n JOIN kafka_lake.sources s USING (source_id) WHERE s.source = %L$$, :'source'),
    $$VALUES ('provisional'::text, 0)$$, 'seed 7: the date stays provisional, with no certificate, until someone closes it');
SELECT is((SELECT count(*)::int FROM kafka_lake.runs JOIN kafka_lake.sources USING (source_id)
           WHERE source = :'source'), 1, 'one run row: the skipped call wrote none');
SELECT is((SELECT count(*)::int FROM kafka_lake.adapter_versions JOIN kafka_lake.sources USING (source_id)
           WHERE source = :'source'), 1, 'one adapter version, reused');
SELECT is((SELECT count(*)::int FROM kafka_lake.silver_machine_events
           WHERE run_id = (SELECT run_id FROM first_bridge)), 4, 'four silver rows');

-- the quality checks
SELECT results_eq(
    $$SELECT check_name, passed FROM kafka_lake.quality_results
      WHERE run_id = (SELECT run_id FROM first_bridge) ORDER BY check_name$$,
    $$VALUES ('accepted_values_operation', true), ('freshness_business_date', true),
             ('not_null_required_columns', true), ('numeric_range_within_bounds', true),
             ('row_count_source_to_silver', true), ('schema_drift', true),
             ('unique_natural_key', true), ('unit_conservation_silver_to_gold', true)$$,
    'the 8 quality checks, all passed');
SELECT results_eq(
    $$SELECT check_name, expected, observed FROM kafka_lake.quality_results
      WHERE run_id = (SELECT run_id FROM first_bridge)
        AND check_name IN ('row_count_source_to_silver', 'unit_conservation_silver_to_gold')
      ORDER BY check_name$$,
    $$VALUES ('row_count_source_to_silver', '4', '4'),
             ('unit_conservation_silver_to_gold', 'units_produced=100 defect_count=6',
              'units_produced=100 defect_count=6')$$,
    'checks record what was expected and what was observed');
SELECT ok((SELECT bool_and(detail IS NOT NULL AND detail <> '') FROM kafka_lake.quality_results
           WHERE run_id = (SELECT run_id FROM first_bridge)), 'every check has a detail');

-- the run, the snapshot, the silver rows
SELECT results_eq(
    $$SELECT r.status, r.selected_events, r.silver_rows, r.gold_rows, r.snapshot_id
      FROM kafka_lake.runs r WHERE r.run_id = (SELECT run_id FROM first_bridge)$$,
    $$SELECT 'processed'::text, 4, 4, 1, snapshot_id FROM first_bridge$$,
    'the run row');
SELECT results_eq(
    $$SELECT is_current, replaces_snapshot_id IS NULL, gold_rows, run_id, source_hash
      FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM first_bridge)$$,
    $$SELECT true, true, 1, run_id, source_hash FROM first_bridge$$,
    'the snapshot row: current, replaces nothing');
SELECT results_eq(
    $$SELECT event_id, kafka_partition, kafka_offset, kafka_key, units_produced, defect_count
      FROM kafka_lake.silver_machine_events WHERE run_id = (SELECT run_id FROM first_bridge)
      ORDER BY kafka_offset$$,
    $$VALUES ('evt-20260629-000001', 0, 0::bigint, 'machine-1', 10::bigint, 0::bigint),
             ('evt-20260629-000002', 0, 1::bigint, 'machine-2', 20::bigint, 1::bigint),
             ('evt-20260629-000003', 0, 2::bigint, 'machine-3', 30::bigint, 2::bigint),
             ('evt-20260629-000004', 0, 3::bigint, 'machine-4', 40::bigint, 3::bigint)$$,
    'silver: the 4 accepted events, with their coordinates');
SELECT is((SELECT event_time FROM kafka_lake.silver_machine_events
           WHERE run_id = (SELECT run_id FROM first_bridge) AND kafka_offset = 0),
          '2026-06-29T09:00:00+09:00'::timestamptz, 'silver: event_time is the instant written');

-- gold_as_of
SELECT results_eq(
    format($$SELECT source, business_date, plant_id, line_id, product_code, units_produced, defect_count
             FROM kafka_lake.gold_as_of(%s)$$, (SELECT snapshot_id FROM first_bridge)),
    format($$VALUES (%L, '2026-06-29'::date, 'plant-01', 'line-01', 'prd-a', 100::bigint, 6::bigint)$$,
           :'source'),
    'gold_as_of(snapshot) returns its gold rows');

-- the adapter files: content-addressed, SHA-256 of the bytes is source_hash
SELECT CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%' THEN ''
            ELSE current_setting('data_directory') || '/' END
       || current_setting('kafka_lake.landing_dir') || '/'
       || replace(a.path, '/events.csv', '') AS adapter_dir
FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
WHERE s.source = :'source' \gset
SELECT is((SELECT path FROM kafka_lake.adapter_versions JOIN kafka_lake.sources USING (source_id)
           WHERE source = :'source'),
          format('%s/adapter/business_date=2026-06-29/source_hash=%s/events.csv', :'source',
                 (SELECT source_hash FROM first_bridge)),
          'the adapter version lives at its content address');
SELECT is(encode(sha256(pg_read_binary_file(:'adapter_dir' || '/events.csv')), 'hex'),
          (SELECT source_hash FROM first_bridge), 'source_hash is the SHA-256 of events.csv');
SELECT is(split_part(pg_read_file(:'adapter_dir' || '/events.csv'), E'\n', 1),
          'event_time,plant_id,line_id,work_order_id,machine_id,product_code,operation,units_produced,defect_count,cycle_time_ms,business_date,event_id,schema_version,kafka_topic,kafka_partition,kafka_offset,kafka_key,kafka_timestamp_ms,kafka_record_fingerprint',
          'events.csv starts with the canonical header');
SELECT results_eq(
    format($$SELECT p->>'source', p->>'topic', p->>'business_date', (p->>'event_count')::int,
                    jsonb_array_length(p->'batches'), p->'first_coordinate'->>'offset',
                    p->'last_coordinate'->>'offset', p->>'source_hash', p ? 'created_at',
                    p->>'kafka_lake_version'
             FROM (SELECT pg_read_file(%L)::jsonb AS p) x$$, :'adapter_dir' || '/provenance.json'),
    format($$VALUES (%L, %L, '2026-06-29', 4, 2, '0', '3', %L, true, %L)$$,
           :'source', :'topic', (SELECT source_hash FROM first_bridge),
           (SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake')),
    'provenance.json: source, topic, date, 4 events from 2 batches, coordinates 0..3');
SELECT is((SELECT count(*)::int FROM pg_ls_dir(:'adapter_dir' || '/../..') f WHERE f LIKE '.tmp-%'), 0,
          'no temporary file is left in adapter/');

-- a date without events
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-06-30')$$, :'source'), 'P0002',
                 format('source "%s" has no accepted event with business_date 2026-06-30', :'source'),
                 'a date without accepted events is an ERROR (P0002)');

-- silver's BRIN index summarises at VACUUM (a bridge of a million events would overflow
-- autovacuum's queue of summarisation requests, each dropped one a LOG line)
SELECT is((SELECT pg_catalog.array_to_string(reloptions, ',') FROM pg_class
           WHERE oid = 'kafka_lake.silver_machine_events_run_idx'::regclass),
          'autosummarize=off', 'silver_machine_events_run_idx has autosummarize off');

-- the view and the functions are not for PUBLIC
SELECT ok(NOT has_function_privilege('public', 'kafka_lake.bridge(text, date, boolean, boolean, boolean)', 'EXECUTE'),
          'bridge() is not executable by PUBLIC');

SELECT * FROM finish();

SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t50_kafka CASCADE;
