-- test/pgtap/80_close.sql -- closing a business date over a multi-partition
-- topic while another date keeps landing, and a late event through the whole
-- cycle: it lands, late_events lists it with the certificate it missed,
-- bridge() refuses without reopen, reopen publishes a 'reopened' snapshot
-- with it (the closed snapshot stays readable), and close_date() closes the
-- date again.
--
-- Needs a running test broker: KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR.
-- Self-contained, not wrapped in a transaction.
--
-- Dates: D = 2026-08-01 (closed), E = 2026-08-02 (keeps landing, provisional).

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test80.close.' :tok
\set source 't80_close_' :tok
\setenv KL_T80_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T80_TOPIC" 3 >/dev/null

DROP SERVER IF EXISTS t80_kafka CASCADE;
CREATE SERVER t80_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't80_kafka', :'topic') \g /dev/null
SELECT set_config('t80.topic', :'topic', false), set_config('t80.source', :'source', false) \g /dev/null

-- one event of a date, to a partition; returns its offset
CREATE FUNCTION pg_temp.send(id text, business_date text, part int, units int DEFAULT 10) RETURNS bigint
LANGUAGE sql AS $$
    SELECT kafka_lake.produce('t80_kafka', current_setting('t80.topic'),
        convert_to(json_build_object(
            'event_id', id, 'schema_version', 1, 'event_time', business_date || 'T09:00:00Z',
            'business_date', business_date, 'plant_id', 'plant-80', 'line_id', 'line-01',
            'work_order_id', 'wo-' || id, 'machine_id', 'm-1', 'product_code', 'prd-a',
            'operation', 'welding', 'units_produced', units, 'defect_count', 0,
            'cycle_time_ms', 100)::text, 'UTF8'),
        convert_to('m-1', 'UTF8'), part)
$$;
CREATE FUNCTION pg_temp.land() RETURNS int
LANGUAGE sql AS $$ SELECT coalesce(sum(accepted), 0)::int FROM kafka_lake.land(current_setting('t80.source')) $$;
CREATE FUNCTION pg_temp.sid() RETURNS int
LANGUAGE sql AS $$ SELECT source_id FROM kafka_lake.sources WHERE source = current_setting('t80.source') $$;

SELECT plan(40);

-- both dates over the three partitions
SELECT pg_temp.send('d1', '2026-08-01', 0, 1), pg_temp.send('d2', '2026-08-01', 1, 2),
       pg_temp.send('d3', '2026-08-01', 2, 4), pg_temp.send('d4', '2026-08-01', 0, 8),
       pg_temp.send('e1', '2026-08-02', 1), pg_temp.send('e2', '2026-08-02', 2) \g /dev/null
SELECT is(pg_temp.land(), 6, 'six events of two dates landed over three partitions');
SELECT array_agg(high_watermark ORDER BY partition)::text AS marks1 FROM kafka_lake.lag(:'source') \gset
SELECT is(:'marks1'::text, '{2,2,2}', 'the partitions end at 2, 2, 2');

-- close D
CREATE TEMP TABLE c1 AS SELECT * FROM kafka_lake.close_date(:'source', '2026-08-01');
SELECT results_eq($$SELECT business_date, status, selected_events, partitions, cutoff IS NULL, closed_by = current_user FROM c1$$,
                  $$VALUES ('2026-08-01'::date, 'closed'::text, 4, 3, true, true)$$,
                  'close_date closes the date: 4 events, 3 partitions, no cutoff, closed by the caller');
SELECT is((SELECT array_agg(through_offset ORDER BY partition)::text FROM kafka_lake.date_closing_partitions
           WHERE closing_id = (SELECT closing_id FROM c1)), :'marks1'::text,
          'the certificate''s offsets are the high watermarks at the call');
SELECT results_eq(
    format($$SELECT p.partition, p.through_timestamp_ms FROM kafka_lake.date_closing_partitions p
             WHERE p.closing_id = %s ORDER BY 1$$, (SELECT closing_id FROM c1)),
    format($$SELECT partition, timestamp_ms FROM kafka_lake.%I_records WHERE "offset" = 1 ORDER BY 1$$, :'source'),
    'each partition''s through_timestamp_ms is the timestamp of its last record below the mark');
SELECT results_eq(
    $$SELECT d.status, d.snapshot_id, d.source_hash, d.selected_events FROM kafka_lake.date_closings d
      WHERE d.source_id = pg_temp.sid()$$,
    $$SELECT 'closed'::text, snapshot_id, source_hash, selected_events FROM c1$$,
    'the certificate is in the catalog, with the snapshot and the source_hash it closed');
SELECT results_eq(
    format($$SELECT closing_status, units_produced::int FROM kafka_lake.gold_current
             WHERE source = %L AND business_date = '2026-08-01'$$, :'source'),
    $$VALUES ('closed'::text, 15)$$, 'the date''s gold rows are closed: units 1 + 2 + 4 + 8');
SELECT results_eq(
    $$SELECT closing_status, is_current FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM c1)$$,
    $$VALUES ('closed'::text, true)$$, 'the closed snapshot is current and says closed');
SELECT is((SELECT count(*)::int FROM kafka_lake.gold_current WHERE source = :'source' AND business_date = '2026-08-02'),
          0, 'the other date was not bridged by the close');

-- E keeps landing and bridging
SELECT pg_temp.send('e3', '2026-08-02', 0), pg_temp.send('e4', '2026-08-02', 2) \g /dev/null
SELECT is(pg_temp.land(), 2, 'the other date keeps landing');
SELECT results_eq(format($$SELECT run_status, snapshot_status FROM kafka_lake.bridge(%L, '2026-08-02')$$, :'source'),
                  $$VALUES ('processed'::text, 'published'::text)$$, 'and bridging');
SELECT is((SELECT DISTINCT closing_status FROM kafka_lake.gold_current
           WHERE source = :'source' AND business_date = '2026-08-02'), 'provisional',
          'its gold stays provisional');

-- closing D twice with nothing new changes nothing
CREATE TEMP TABLE c2 AS SELECT * FROM kafka_lake.close_date(:'source', '2026-08-01');
SELECT results_eq($$SELECT status, closing_id, snapshot_id, source_hash, closed_at FROM c2$$,
                  $$SELECT 'already_closed'::text, closing_id, snapshot_id, source_hash, closed_at FROM c1$$,
                  'closing again with nothing new returns the same certificate');
SELECT is((SELECT count(*)::int FROM kafka_lake.date_closings WHERE source_id = pg_temp.sid()), 1,
          'no new certificate');
SELECT is((SELECT count(*)::int FROM kafka_lake.snapshots WHERE source_id = pg_temp.sid()
           AND business_date = '2026-08-01'), 1, 'no new snapshot');
SELECT is((SELECT count(*)::int FROM kafka_lake.late_events WHERE source = :'source'), 0, 'no late event yet');

-- a late event of D
SELECT pg_temp.send('d5', '2026-08-01', 1, 16) AS late_offset \gset
SELECT is(pg_temp.land(), 1, 'a late event of the closed date lands as accepted');
SELECT results_eq(
    format($$SELECT event_id, business_date, closing_id, closing_status, partition, "offset", through_offset,
                    landed_at IS NOT NULL, closed_at
             FROM kafka_lake.late_events WHERE source = %L$$, :'source'),
    format($$SELECT 'd5'::text, '2026-08-01'::date, closing_id, 'closed'::text, 1, %s::bigint, 2::bigint, true, closed_at
             FROM c1$$, :'late_offset'),
    'late_events lists it with the certificate it missed and its coordinate');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-08-01')$$, :'source'), '55000',
                 format('business date 2026-08-01 of source "%s" is closed, and its accepted events changed since', :'source'),
                 'bridge() of the closed date refuses without reopen');
SELECT results_eq(
    format($$SELECT closing_status, units_produced::int, snapshot_id FROM kafka_lake.gold_current
             WHERE source = %L AND business_date = '2026-08-01'$$, :'source'),
    $$SELECT 'closed'::text, 15, snapshot_id FROM c1$$, 'and publishes nothing');

-- reopen: a correction snapshot
CREATE TEMP TABLE r1 AS SELECT * FROM kafka_lake.bridge(:'source', '2026-08-01', reopen => true);
SELECT results_eq($$SELECT selected_events, run_status, snapshot_status FROM r1$$,
                  $$VALUES (5, 'processed'::text, 'published'::text)$$,
                  'bridge(..., reopen => true) publishes a correction with the late event');
SELECT results_eq(
    format($$SELECT closing_status, units_produced::int, snapshot_id FROM kafka_lake.gold_current
             WHERE source = %L AND business_date = '2026-08-01'$$, :'source'),
    $$SELECT 'reopened'::text, 31, snapshot_id FROM r1$$, 'its gold rows say reopened');
SELECT is((SELECT closing_status FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM r1)),
          'reopened', 'and so does the snapshot');
SELECT results_eq($$SELECT closing_status, units_produced::int FROM kafka_lake.gold_as_of((SELECT snapshot_id FROM c1))$$,
                  $$VALUES ('closed'::text, 15)$$, 'the closed snapshot stays readable through gold_as_of');
SELECT results_eq(
    $$SELECT status, reopened_by_snapshot_id FROM kafka_lake.date_closings WHERE closing_id = (SELECT closing_id FROM c1)$$,
    $$SELECT 'reopened'::text, snapshot_id FROM r1$$, 'the certificate says it was reopened, and by which snapshot');
SELECT is((SELECT string_agg(event_id || '/' || closing_status, ',') FROM kafka_lake.late_events WHERE source = :'source'),
          'd5/reopened', 'late_events still lists the event, against a reopened certificate');
SELECT results_eq(format($$SELECT run_status, snapshot_status, snapshot_id FROM kafka_lake.bridge(%L, '2026-08-01')$$, :'source'),
                  $$SELECT 'skipped'::text, 'skipped'::text, snapshot_id FROM r1$$,
                  'a reopened date bridges as any date: unchanged, skipped');
SELECT results_eq(format($$SELECT run_status, snapshot_id FROM kafka_lake.bridge(%L, '2026-08-01', reopen => true)$$, :'source'),
                  $$SELECT 'skipped'::text, snapshot_id FROM r1$$, 'reopen of an unchanged date publishes nothing');

-- close it again
CREATE TEMP TABLE c3 AS SELECT * FROM kafka_lake.close_date(:'source', '2026-08-01');
SELECT results_eq($$SELECT status, selected_events, source_hash FROM c3$$,
                  $$SELECT 'closed'::text, 5, source_hash FROM r1$$, 'close_date closes the reopened date again');
SELECT ok((SELECT closing_id FROM c3) > (SELECT closing_id FROM c1), 'with a new certificate');
SELECT results_eq(
    $$SELECT status, superseded_by FROM kafka_lake.date_closings WHERE closing_id = (SELECT closing_id FROM c1)$$,
    $$SELECT 'superseded'::text, closing_id FROM c3$$, 'which supersedes the first one');
SELECT results_eq(
    format($$SELECT closing_status, units_produced::int, snapshot_id FROM kafka_lake.gold_current
             WHERE source = %L AND business_date = '2026-08-01'$$, :'source'),
    $$SELECT 'closed'::text, 31, snapshot_id FROM c3$$, 'the date''s gold is closed, the late event counted');
SELECT results_eq(
    $$SELECT replaces_snapshot_id, run_id FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM c3)$$,
    $$SELECT snapshot_id, run_id FROM r1$$,
    'the closed snapshot republishes the reopened one''s run (gold rows never change once written)');
SELECT results_eq($$SELECT closing_status, units_produced::int FROM kafka_lake.gold_as_of((SELECT snapshot_id FROM r1))$$,
                  $$VALUES ('reopened'::text, 31)$$, 'the reopened snapshot keeps its status');
SELECT is((SELECT count(*)::int FROM kafka_lake.late_events WHERE source = :'source'), 0,
          'the new certificate counts the event: nothing is late any more');
SELECT is((SELECT array_agg(through_offset ORDER BY partition)::text FROM kafka_lake.date_closing_partitions
           WHERE closing_id = (SELECT closing_id FROM c3)),
          (SELECT array_agg(high_watermark ORDER BY partition)::text FROM kafka_lake.lag(:'source')),
          'its offsets are the watermarks at the new call');
SELECT results_eq(format($$SELECT run_status, snapshot_status FROM kafka_lake.bridge(%L, '2026-08-01')$$, :'source'),
                  $$VALUES ('skipped'::text, 'skipped'::text)$$, 'bridge() of the closed, unchanged date is skipped');
SELECT is((SELECT DISTINCT closing_status FROM kafka_lake.gold_current
           WHERE source = :'source' AND business_date = '2026-08-02'), 'provisional',
          'the other date is untouched');
SELECT is((SELECT count(*)::int FROM kafka_lake.verify(:'source')), 0, 'verify is clean');
SELECT is((SELECT count(*)::int FROM kafka_lake.coordinate_list WHERE source = :'source'), 9,
          'every coordinate landed once');

SELECT * FROM finish();

SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t80_kafka CASCADE;
