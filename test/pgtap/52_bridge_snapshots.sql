-- test/pgtap/52_bridge_snapshots.sql -- snapshots of a date, late events,
-- the fault point bridge_before_gold, failed quality checks, deduplication
--
-- Needs a running test broker: KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR.
-- Self-contained, not wrapped in a transaction.
--
-- Dates used: A = 2026-07-03 (published, then a late event, then a fault,
-- then a stale event), B = 2026-07-04 (published, must stay untouched),
-- C = 2026-07-10 (only a stale event: fails quality, nothing published),
-- D = 2026-07-05 (two events with one natural key: deduplicated).

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test52.snap.' :tok
\set source 't52_snap_' :tok
\setenv KL_T52_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T52_TOPIC" 2 >/dev/null

DROP SERVER IF EXISTS t52_kafka CASCADE;
CREATE SERVER t52_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't52_kafka', :'topic') \g /dev/null

-- send one event of a business date to a partition
CREATE FUNCTION pg_temp.send(event_id text, business_date text, event_time text,
                             line_id text, machine_id text, units int, defects int,
                             part int, work_order_id text DEFAULT 'wo-52') RETURNS bigint
LANGUAGE sql AS $$
    SELECT kafka_lake.produce('t52_kafka', current_setting('t52.topic'),
        convert_to(json_build_object(
            'event_id', event_id, 'schema_version', 1, 'event_time', event_time,
            'business_date', business_date, 'plant_id', 'plant-52', 'line_id', line_id,
            'work_order_id', work_order_id, 'machine_id', machine_id,
            'product_code', 'prd-a', 'operation', 'welding',
            'units_produced', units, 'defect_count', defects, 'cycle_time_ms', 1000)::text, 'UTF8'),
        convert_to(machine_id, 'UTF8'), part)
$$;
SELECT set_config('t52.topic', :'topic', false) \g /dev/null

CREATE FUNCTION pg_temp.land() RETURNS int
LANGUAGE sql AS $$ SELECT coalesce(sum(accepted), 0)::int FROM kafka_lake.land(current_setting('t52.source')) $$;
SELECT set_config('t52.source', :'source', false) \g /dev/null

CREATE FUNCTION pg_temp.adapter_dirs(business_date text) RETURNS int
LANGUAGE sql AS $$
    SELECT count(*)::int FROM pg_ls_dir(
        CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%' THEN ''
             ELSE current_setting('data_directory') || '/' END
        || current_setting('kafka_lake.landing_dir') || '/' || current_setting('t52.source')
        || '/adapter/business_date=' || business_date, true, false)
$$;

CREATE FUNCTION pg_temp.counts(OUT runs int, OUT adapters int, OUT silver int, OUT snapshots int)
LANGUAGE sql AS $$
    SELECT (SELECT count(*)::int FROM kafka_lake.runs r WHERE r.source_id = s.source_id),
           (SELECT count(*)::int FROM kafka_lake.adapter_versions a WHERE a.source_id = s.source_id),
           (SELECT count(*)::int FROM kafka_lake.silver_machine_events m
            JOIN kafka_lake.runs r USING (run_id) WHERE r.source_id = s.source_id),
           (SELECT count(*)::int FROM kafka_lake.snapshots n WHERE n.source_id = s.source_id)
    FROM kafka_lake.sources s WHERE s.source = current_setting('t52.source')
$$;

SELECT plan(33);

-- dates A and B, published
SELECT pg_temp.send('evt-a1', '2026-07-03', '2026-07-03T09:00:00+09:00', 'line-01', 'm-1', 10, 1, 0) \g /dev/null
SELECT pg_temp.send('evt-a2', '2026-07-03', '2026-07-03T10:00:00+09:00', 'line-01', 'm-2', 30, 0, 1) \g /dev/null
SELECT pg_temp.send('evt-b1', '2026-07-04', '2026-07-04T09:00:00+09:00', 'line-01', 'm-1', 7, 7, 0) \g /dev/null
SELECT is(pg_temp.land(), 3, 'three events of two dates landed');

CREATE TEMP TABLE a1 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-03');
CREATE TEMP TABLE b1 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-04');
SELECT results_eq($$SELECT run_status, snapshot_status, silver_rows, gold_rows FROM a1$$,
                  $$VALUES ('processed'::text, 'published'::text, 2, 1)$$, 'date A published');
SELECT results_eq($$SELECT run_status, snapshot_status FROM b1$$,
                  $$VALUES ('processed'::text, 'published'::text)$$, 'date B published');
SELECT results_eq(
    format($$SELECT business_date, units_produced, defect_count, defect_rate FROM kafka_lake.gold_current
             WHERE source = %L ORDER BY business_date$$, :'source'),
    $$VALUES ('2026-07-03'::date, 40::bigint, 1::bigint, 0.025000::numeric),
             ('2026-07-04'::date, 7::bigint, 7::bigint, 1.000000::numeric)$$,
    'gold_current: one row per date');

-- a late event for A: a new snapshot replaces A's, B is untouched
SELECT pg_temp.send('evt-a3-late', '2026-07-03', '2026-07-03T23:30:00+09:00', 'line-02', 'm-3', 60, 6, 1) \g /dev/null
SELECT is(pg_temp.land(), 1, 'a late event for date A landed');
CREATE TEMP TABLE a2 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-03');
SELECT results_eq($$SELECT adapter_status, run_status, snapshot_status, selected_events, silver_rows, gold_rows FROM a2$$,
                  $$VALUES ('created'::text, 'processed'::text, 'published'::text, 3, 3, 2)$$,
                  'date A again: a new adapter version, a new run, a new snapshot with 2 gold rows');
SELECT isnt((SELECT source_hash FROM a2), (SELECT source_hash FROM a1), 'the accepted set changed: a new source_hash');
SELECT isnt((SELECT snapshot_id FROM a2), (SELECT snapshot_id FROM a1), 'a new snapshot_id');
SELECT results_eq(
    format($$SELECT is_current, replaces_snapshot_id FROM kafka_lake.snapshots WHERE snapshot_id IN (%s, %s)
             ORDER BY snapshot_id$$, (SELECT snapshot_id FROM a1), (SELECT snapshot_id FROM a2)),
    format($$VALUES (false, NULL::bigint), (true, %s::bigint)$$, (SELECT snapshot_id FROM a1)),
    'the old snapshot is no longer current; the new one replaces it');
SELECT results_eq(
    format($$SELECT line_id, units_produced, defect_count FROM kafka_lake.gold_as_of(%s)$$, (SELECT snapshot_id FROM a1)),
    $$VALUES ('line-01', 40::bigint, 1::bigint)$$,
    'gold_as_of(old snapshot): the gold rows as first published');
SELECT results_eq(
    format($$SELECT line_id, units_produced, defect_count FROM kafka_lake.gold_as_of(%s)$$, (SELECT snapshot_id FROM a2)),
    $$VALUES ('line-01', 40::bigint, 1::bigint), ('line-02', 60::bigint, 6::bigint)$$,
    'gold_as_of(new snapshot): the late event is counted');
SELECT results_eq(
    format($$SELECT business_date, line_id, units_produced, snapshot_id FROM kafka_lake.gold_current
             WHERE source = %L ORDER BY business_date, line_id$$, :'source'),
    format($$VALUES ('2026-07-03'::date, 'line-01', 40::bigint, %1$s::bigint),
                    ('2026-07-03'::date, 'line-02', 60::bigint, %1$s::bigint),
                    ('2026-07-04'::date, 'line-01', 7::bigint, %2$s::bigint)$$,
           (SELECT snapshot_id FROM a2), (SELECT snapshot_id FROM b1)),
    'gold_current: A from its new snapshot, B unchanged');
SELECT results_eq(format($$SELECT run_status, snapshot_id FROM kafka_lake.bridge(%L, '2026-07-04')$$, :'source'),
                  $$SELECT 'skipped'::text, snapshot_id FROM b1$$,
                  'date B: nothing new, skipped, same snapshot');

-- the fault point bridge_before_gold: nothing of that call persists
SELECT pg_temp.send('evt-a4-late', '2026-07-03', '2026-07-03T23:40:00+09:00', 'line-02', 'm-4', 5, 0, 0) \g /dev/null
SELECT is(pg_temp.land(), 1, 'another late event for date A landed');
CREATE TEMP TABLE before_fault AS SELECT * FROM pg_temp.counts();
SELECT pg_temp.adapter_dirs('2026-07-03') AS dirs_before \gset
SET kafka_lake.fault_injection = 'bridge_before_gold';
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-07-03')$$, :'source'), 'XX000',
                 'kafka_lake fault injection: bridge_before_gold', 'the bridge fails right before gold');
RESET kafka_lake.fault_injection;
SELECT results_eq($$SELECT * FROM pg_temp.counts()$$, $$SELECT * FROM before_fault$$,
                  'no run, adapter version, silver row or snapshot of that call remains');
SELECT is(pg_temp.adapter_dirs('2026-07-03'), :dirs_before,
          'the adapter file that call created was removed');
SELECT is((SELECT snapshot_id FROM kafka_lake.gold_current WHERE source = :'source'
           AND business_date = '2026-07-03' LIMIT 1), (SELECT snapshot_id FROM a2),
          'date A keeps its snapshot');
CREATE TEMP TABLE a3 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-03');
SELECT results_eq($$SELECT adapter_status, run_status, snapshot_status, silver_rows FROM a3$$,
                  $$VALUES ('created'::text, 'processed'::text, 'published'::text, 4)$$,
                  'the next call succeeds');
SELECT is((SELECT replaces_snapshot_id FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM a3)),
          (SELECT snapshot_id FROM a2), 'and replaces the snapshot that stayed current');

-- a failed check: an event_time five days before its business date
SELECT pg_temp.send('evt-c1-stale', '2026-07-10', '2026-07-05T09:00:00+09:00', 'line-01', 'm-1', 3, 0, 0) \g /dev/null
SELECT is(pg_temp.land(), 1, 'an event dated five days before its business date is accepted by the contract');
CREATE TEMP TABLE c1 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-10');
SELECT results_eq($$SELECT run_status, quality_passed, quality_total, gold_rows, snapshot_id, snapshot_status FROM c1$$,
                  $$VALUES ('failed_quality'::text, 7, 8, 0, NULL::bigint, 'not_published'::text)$$,
                  'date C: failed_quality, 7 of 8, nothing published');
SELECT results_eq(
    $$SELECT check_name, passed, expected, observed FROM kafka_lake.quality_results
      WHERE run_id = (SELECT run_id FROM c1) AND NOT passed$$,
    $$VALUES ('freshness_business_date', false, '0', '1')$$,
    'the failing check is freshness_business_date, with what it observed');
SELECT matches((SELECT detail FROM kafka_lake.quality_results
                WHERE run_id = (SELECT run_id FROM c1) AND check_name = 'freshness_business_date'),
               'evt-c1-stale', 'its detail names the event');
SELECT is((SELECT status FROM kafka_lake.runs WHERE run_id = (SELECT run_id FROM c1)), 'failed_quality',
          'the run is recorded as failed_quality');
SELECT is((SELECT count(*)::int FROM kafka_lake.gold_current WHERE source = :'source' AND business_date = '2026-07-10'),
          0, 'no gold for date C');
SELECT results_eq(format($$SELECT run_status FROM kafka_lake.bridge(%L, '2026-07-10')$$, :'source'),
                  $$VALUES ('failed_quality'::text)$$,
                  'a failed run does not make the next call skip: it is checked again');

-- a failed check on a published date: its current snapshot stays
SELECT pg_temp.send('evt-b2-stale', '2026-07-04', '2026-06-28T09:00:00+09:00', 'line-09', 'm-9', 1, 0, 1) \g /dev/null
SELECT is(pg_temp.land(), 1, 'a stale event for date B landed');
CREATE TEMP TABLE b2 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-04');
SELECT results_eq($$SELECT run_status, snapshot_status, snapshot_id FROM b2$$,
                  $$SELECT 'failed_quality'::text, 'not_published'::text, snapshot_id FROM b1$$,
                  'date B: failed_quality, and its published snapshot is still the current one');
SELECT results_eq(
    format($$SELECT line_id, units_produced FROM kafka_lake.gold_current
             WHERE source = %L AND business_date = '2026-07-04'$$, :'source'),
    $$VALUES ('line-01', 7::bigint)$$, 'date B: gold unchanged');

-- deduplication: two event_ids, one natural key; the first in coordinate order wins
SELECT pg_temp.send('evt-d1', '2026-07-05', '2026-07-05T09:00:00+09:00', 'line-01', 'm-1', 10, 0, 0, 'wo-d') \g /dev/null
SELECT pg_temp.send('evt-d2-same-key', '2026-07-05', '2026-07-05T00:00:00Z', 'line-01', 'm-1', 99, 9, 0, 'wo-d') \g /dev/null
SELECT is(pg_temp.land(), 2, 'two events with one natural key (the same instant, written two ways) landed');
CREATE TEMP TABLE d1 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-05');
SELECT results_eq($$SELECT selected_events, run_status, quality_passed, silver_rows, gold_rows FROM d1$$,
                  $$VALUES (2, 'processed'::text, 8, 1, 1)$$,
                  'date D: 2 selected, 1 silver row, all checks pass');
SELECT results_eq(
    $$SELECT event_id, units_produced FROM kafka_lake.silver_machine_events WHERE run_id = (SELECT run_id FROM d1)$$,
    $$VALUES ('evt-d1', 10::bigint)$$, 'the first event in coordinate order is the silver row');

SELECT * FROM finish();

SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t52_kafka CASCADE;
