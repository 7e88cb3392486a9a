-- test/pgtap/81_close_cutoff.sql -- close_date(..., cutoff): the marks are
-- the offsets the partitions had at the cutoff (offsets-for-times), the close
-- lands nothing past them, and what came after the cutoff is late; a later
-- close certifies it.
--
-- Needs a running test broker: KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR.  The
-- test broker keeps no time index (it answers every ListOffsets-by-time with
-- "no such record"): kafka_lake then finds the offsets by reading records.
-- Self-contained, not wrapped in a transaction.  Record timestamps are the
-- producer's clock, the one clock_timestamp() reads: the cutoff is taken
-- between two sleeps, so no record shares its millisecond.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test81.cutoff.' :tok
\set source 't81_cutoff_' :tok
\setenv KL_T81_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T81_TOPIC" 4 >/dev/null

DROP SERVER IF EXISTS t81_kafka CASCADE;
CREATE SERVER t81_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't81_kafka', :'topic') \g /dev/null
SELECT set_config('t81.topic', :'topic', false) \g /dev/null

CREATE FUNCTION pg_temp.send(id text, business_date text, part int) RETURNS bigint
LANGUAGE sql AS $$
    SELECT kafka_lake.produce('t81_kafka', current_setting('t81.topic'),
        convert_to(json_build_object(
            'event_id', id, 'schema_version', 1, 'event_time', business_date || 'T23:00:00Z',
            'business_date', business_date, 'plant_id', 'plant-81', 'line_id', 'line-01',
            'work_order_id', 'wo-' || id, 'machine_id', 'm-1', 'product_code', 'prd-a',
            'operation', 'welding', 'units_produced', 1, 'defect_count', 0,
            'cycle_time_ms', 100)::text, 'UTF8'),
        NULL, part)
$$;

SELECT plan(19);

-- before the cutoff: partitions 0, 1 and 2; partition 3 stays empty
SELECT pg_temp.send('a1', '2026-08-10', 0), pg_temp.send('a2', '2026-08-10', 0),
       pg_temp.send('a3', '2026-08-10', 1), pg_temp.send('a4', '2026-08-10', 2) \g /dev/null
SELECT pg_sleep(0.05) \g /dev/null
SELECT clock_timestamp() AS cutoff \gset
SELECT array_agg(high_watermark ORDER BY partition)::text AS at_cutoff FROM kafka_lake.lag(:'source') \gset
SELECT pg_sleep(0.05) \g /dev/null
-- after it: more of the date in partitions 0 and 1, another date in 1, nothing in 2
SELECT pg_temp.send('b1', '2026-08-10', 0), pg_temp.send('x1', '2026-08-11', 1),
       pg_temp.send('b2', '2026-08-10', 1) \g /dev/null
SELECT is(:'at_cutoff'::text, '{2,1,1,0}', 'the partitions ended at 2, 1, 1, 0 at the cutoff');

SELECT throws_ok($$SELECT * FROM kafka_lake.close_date('x', '2026-08-10', cutoff => now() + interval '1 hour')$$,
                 '22023', NULL, 'a cutoff in the future is refused');

-- close at the cutoff, before anything was landed
CREATE TEMP TABLE c1 AS SELECT * FROM kafka_lake.close_date(:'source', '2026-08-10', cutoff => :'cutoff');
SELECT results_eq($$SELECT status, selected_events, partitions, cutoff FROM c1$$,
                  format($$VALUES ('closed'::text, 4, 4, %L::timestamptz)$$, :'cutoff'),
                  'close_date at the cutoff certifies the four events before it');
SELECT is((SELECT array_agg(through_offset ORDER BY partition)::text FROM kafka_lake.date_closing_partitions
           WHERE closing_id = (SELECT closing_id FROM c1)), :'at_cutoff'::text,
          'the certificate''s offsets equal the watermarks at the cutoff');
SELECT ok((SELECT bool_and(through_timestamp_ms < extract(epoch FROM :'cutoff'::timestamptz) * 1000)
           FROM kafka_lake.date_closing_partitions WHERE closing_id = (SELECT closing_id FROM c1)),
          'every through_timestamp_ms lies before the cutoff');
SELECT results_eq(
    format($$SELECT p.through_timestamp_ms FROM kafka_lake.date_closing_partitions p
             WHERE p.closing_id = %s ORDER BY p.partition$$, (SELECT closing_id FROM c1)),
    format($$SELECT r.timestamp_ms FROM generate_series(0, 3) AS g(p)
             LEFT JOIN kafka_lake.%I_records r ON r.partition = g.p
              AND r."offset" = (%L::bigint[])[g.p + 1] - 1 ORDER BY g.p$$, :'source', :'at_cutoff'),
    'each is the timestamp of the partition''s last record below its mark (none for the empty partition)');
SELECT is((SELECT array_agg(committed_offset ORDER BY partition)::text FROM kafka_lake.lag(:'source')),
          :'at_cutoff'::text, 'the close landed and committed up to the marks and no further');
SELECT is((SELECT count(*)::int FROM kafka_lake.coordinate_list WHERE source = :'source'), 4,
          'nothing past a mark was landed');
SELECT is((SELECT count(*)::int FROM kafka_lake.late_events WHERE source = :'source'), 0,
          'nothing late has landed yet');

-- the next land() takes the rest: the date's events after the cutoff are late
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 3, 'land() lands what came after the cutoff');
SELECT results_eq(
    format($$SELECT event_id, partition, "offset", through_offset, timestamp_ms >= extract(epoch FROM %L::timestamptz) * 1000
             FROM kafka_lake.late_events WHERE source = %L ORDER BY partition$$, :'cutoff', :'source'),
    $$VALUES ('b1'::text, 0, 2::bigint, 2::bigint, true), ('b2'::text, 1, 2::bigint, 1::bigint, true)$$,
    'late_events lists the date''s two events after the cutoff, not the other date''s');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-08-10')$$, :'source'), '55000', NULL,
                 'bridge() of the closed date refuses: it would count them');

-- events landed before a close but past its cutoff are late as well
CREATE TEMP TABLE c2 AS SELECT * FROM kafka_lake.close_date(:'source', '2026-08-10', cutoff => :'cutoff');
SELECT results_eq($$SELECT status, closing_id FROM c2$$, $$SELECT 'already_closed'::text, closing_id FROM c1$$,
                  'closing at the same cutoff again changes nothing, although the late events have landed');
SELECT is((SELECT count(*)::int FROM kafka_lake.late_events WHERE source = :'source'), 2, 'they stay late');

-- a close at a later cutoff certifies them
SELECT pg_sleep(0.05) \g /dev/null
CREATE TEMP TABLE c3 AS SELECT * FROM kafka_lake.close_date(:'source', '2026-08-10', cutoff => clock_timestamp());
SELECT results_eq($$SELECT status, selected_events FROM c3$$, $$VALUES ('closed'::text, 6)$$,
                  'close_date at a later cutoff certifies the date with them');
SELECT is((SELECT array_agg(through_offset ORDER BY partition)::text FROM kafka_lake.date_closing_partitions
           WHERE closing_id = (SELECT closing_id FROM c3)), '{3,3,1,0}',
          'its marks are the partitions'' ends (no record lies after its cutoff)');
SELECT is((SELECT status FROM kafka_lake.date_closings WHERE closing_id = (SELECT closing_id FROM c1)),
          'superseded', 'the first certificate is superseded');
SELECT is((SELECT count(*)::int FROM kafka_lake.late_events WHERE source = :'source'), 0, 'nothing is late');
SELECT is((SELECT DISTINCT closing_status FROM kafka_lake.gold_current WHERE source = :'source'), 'closed',
          'the date''s gold is closed');

SELECT * FROM finish();

SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t81_kafka CASCADE;
