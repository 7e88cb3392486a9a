-- test/pgtap/83_close_concurrency.sql -- close_date(), land() and bridge()
-- of the same date at once stay correct:
--   A. a close waits for the land() that holds a partition below its mark,
--      and certifies what it landed; an event produced meanwhile is late;
--   B. while a close is open, land() skips its partitions ('locked') and a
--      bridge() of the date waits, then finds the date closed;
--   C. a close waits for an open bridge() of the date, then closes its
--      snapshot as it is (a copy under 'closed');
--   D. two closes of one date: the second finds it already closed.
-- Every coordinate lands once.
--
-- Needs a running test broker (KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR) and
-- dblink: the other sessions are dblink connections to this database.
-- Self-contained, not wrapped in a transaction; waits are observed
-- (pg_stat_activity, pg_locks), never timed.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test83.conc.' :tok
\set source 't83_conc_' :tok
\setenv KL_T83_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T83_TOPIC" 2 >/dev/null

DROP SERVER IF EXISTS t83_kafka CASCADE;
CREATE SERVER t83_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't83_kafka', :'topic') \g /dev/null
SELECT set_config('t83.topic', :'topic', false), set_config('t83.source', :'source', false) \g /dev/null

CREATE FUNCTION pg_temp.send(id text, business_date text, part int) RETURNS bigint
LANGUAGE sql AS $$
    SELECT kafka_lake.produce('t83_kafka', current_setting('t83.topic'),
        convert_to(json_build_object(
            'event_id', id, 'schema_version', 1, 'event_time', business_date || 'T09:00:00Z',
            'business_date', business_date, 'plant_id', 'plant-83', 'line_id', 'line-01',
            'work_order_id', 'wo-' || id, 'machine_id', 'm-1', 'product_code', 'prd-a',
            'operation', 'welding', 'units_produced', 1, 'defect_count', 0,
            'cycle_time_ms', 100)::text, 'UTF8'),
        NULL, part)
$$;

-- wait (at most 20 s) until a backend waits in kafka_lake's own wait (a partition lock)
CREATE FUNCTION pg_temp.waits_for_partition(pid int) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 200 LOOP
        IF EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = $1 AND a.wait_event_type = 'Extension') THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.1);
    END LOOP;
    RETURN false;
END
$$;

-- wait (at most 20 s) until a backend waits for the bridge lock of (source, date)
CREATE FUNCTION pg_temp.waits_for_date(pid int, business_date date) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 200 LOOP
        IF EXISTS (SELECT 1 FROM pg_locks l
                   WHERE l.pid = $1 AND l.locktype = 'advisory' AND l.objsubid = 19277 AND NOT l.granted
                     AND l.classid::int = (SELECT source_id FROM kafka_lake.sources s
                                           WHERE s.source = current_setting('t83.source'))
                     AND l.objid::bigint = $2 - '2000-01-01'::date) THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.1);
    END LOOP;
    RETURN false;
END
$$;

SELECT format('dbname=%s host=%s port=%s user=%s', current_database(),
              split_part(current_setting('unix_socket_directories'), ',', 1),
              current_setting('port'), current_user) AS connstr \gset
SELECT dblink_connect('t83a', :'connstr') \g /dev/null
SELECT dblink_connect('t83b', :'connstr') \g /dev/null
SELECT pid AS pid_a FROM dblink('t83a', 'SELECT pg_backend_pid()') AS t(pid int) \gset
SELECT pid AS pid_b FROM dblink('t83b', 'SELECT pg_backend_pid()') AS t(pid int) \gset

SELECT plan(26);

-- A. a close waits for the land() that holds the partitions
SELECT pg_temp.send('a1', '2026-09-01', 0), pg_temp.send('a2', '2026-09-01', 1),
       pg_temp.send('a3', '2026-09-01', 1) \g /dev/null
BEGIN;
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 3,
          'A: this session lands the date and keeps its transaction open');
SELECT is(dblink_send_query('t83a', format($$SELECT status, selected_events, closing_id FROM kafka_lake.close_date(%L, '2026-09-01')$$,
                                          :'source')), 1, 'A: session a closes the date');
SELECT ok(pg_temp.waits_for_partition(:pid_a), 'A: it waits for the partitions this session holds');
SELECT pg_temp.send('a4', '2026-09-01', 0) \g /dev/null
COMMIT;
CREATE TEMP TABLE ca AS SELECT * FROM dblink_get_result('t83a') AS t(status text, selected_events int, closing_id bigint);
SELECT is((SELECT count(*)::int FROM dblink_get_result('t83a') AS t(x text)), 0, 'A: session a is done');
SELECT results_eq($$SELECT status, selected_events FROM ca$$, $$VALUES ('closed'::text, 3)$$,
                  'A: once this session commits, the date closes with the three events it landed');
SELECT is((SELECT array_agg(through_offset ORDER BY partition)::text FROM kafka_lake.date_closing_partitions
           WHERE closing_id = (SELECT closing_id FROM ca)), '{1,2}',
          'A: the marks are the watermarks the close read at its start');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 1, 'A: the event produced meanwhile lands');
SELECT is((SELECT string_agg(event_id, ',') FROM kafka_lake.late_events WHERE source = :'source'), 'a4',
          'A: and is late');

-- B. land() and bridge() while a close is open
SELECT pg_temp.send('b1', '2026-09-02', 0), pg_temp.send('b2', '2026-09-02', 1) \g /dev/null
SELECT dblink_exec('t83a', 'BEGIN') \g /dev/null
SELECT results_eq(format($$SELECT * FROM dblink('t83a', %L) AS t(status text, selected_events int)$$,
                         format($$SELECT status, selected_events FROM kafka_lake.close_date(%L, '2026-09-02')$$, :'source')),
                  $$VALUES ('closed'::text, 2)$$, 'B: session a closes another date and keeps its transaction open');
SELECT pg_temp.send('b3', '2026-09-02', 1) \g /dev/null
SELECT results_eq(format($$SELECT DISTINCT status FROM kafka_lake.land(%L, timeout => '10 s')$$, :'source'),
                  $$VALUES ('locked'::text)$$, 'B: land() skips the partitions the close holds, without waiting');
SELECT is(dblink_send_query('t83b', format($$SELECT run_status, snapshot_status FROM kafka_lake.bridge(%L, '2026-09-02')$$,
                                          :'source')), 1, 'B: session b bridges the date');
SELECT ok(pg_temp.waits_for_date(:pid_b, '2026-09-02'), 'B: it waits for the close''s bridge lock');
SELECT dblink_exec('t83a', 'COMMIT') \g /dev/null
SELECT results_eq($$SELECT * FROM dblink_get_result('t83b') AS t(run_status text, snapshot_status text)$$,
                  $$VALUES ('skipped'::text, 'skipped'::text)$$,
                  'B: once the close commits, the bridge finds the date closed and unchanged');
SELECT is((SELECT count(*)::int FROM dblink_get_result('t83b') AS t(x text)), 0, 'B: session b is done');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 1, 'B: the event produced meanwhile lands now');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-09-02')$$, :'source'), '55000', NULL,
                 'B: and a bridge of the closed date refuses to publish it');

-- C. a close waits for an open bridge() of the date
SELECT pg_temp.send('c1', '2026-09-03', 0) \g /dev/null
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 1, 'C: an event of a third date landed');
SELECT dblink_exec('t83b', 'BEGIN') \g /dev/null
SELECT snapshot_id AS c_snapshot FROM dblink('t83b', format($$SELECT snapshot_id FROM kafka_lake.bridge(%L, '2026-09-03')$$,
                                                           :'source')) AS t(snapshot_id bigint) \gset
SELECT is(dblink_send_query('t83a', format($$SELECT status, snapshot_id FROM kafka_lake.close_date(%L, '2026-09-03')$$,
                                          :'source')), 1, 'C: session a closes the date session b is bridging');
SELECT ok(pg_temp.waits_for_date(:pid_a, '2026-09-03'), 'C: the close waits for the bridge lock');
SELECT dblink_exec('t83b', 'COMMIT') \g /dev/null
CREATE TEMP TABLE cc AS SELECT * FROM dblink_get_result('t83a') AS t(status text, snapshot_id bigint);
SELECT is((SELECT count(*)::int FROM dblink_get_result('t83a') AS t(x text)), 0, 'C: session a is done');
SELECT results_eq(
    $$SELECT s.closing_status, s.replaces_snapshot_id, s.run_id = p.run_id FROM kafka_lake.snapshots s
      JOIN kafka_lake.snapshots p ON p.snapshot_id = s.replaces_snapshot_id
      WHERE s.snapshot_id = (SELECT snapshot_id FROM cc)$$,
    format($$VALUES ('closed'::text, %s::bigint, true)$$, :'c_snapshot'),
    'C: the close closes the bridge''s snapshot as it is: a copy of its run''s gold under ''closed''');

-- D. two closes of one date
SELECT pg_temp.send('d1', '2026-09-04', 1) \g /dev/null
SELECT dblink_exec('t83a', 'BEGIN') \g /dev/null
SELECT closing_id AS d_closing FROM dblink('t83a', format($$SELECT closing_id FROM kafka_lake.close_date(%L, '2026-09-04')$$,
                                                        :'source')) AS t(closing_id bigint) \gset
SELECT is(dblink_send_query('t83b', format($$SELECT status, closing_id FROM kafka_lake.close_date(%L, '2026-09-04')$$,
                                          :'source')), 1, 'D: session b closes the date session a is closing');
SELECT ok(pg_temp.waits_for_partition(:pid_b), 'D: it waits for the partitions session a holds');
SELECT dblink_exec('t83a', 'COMMIT') \g /dev/null
SELECT results_eq($$SELECT * FROM dblink_get_result('t83b') AS t(status text, closing_id bigint)$$,
                  format($$VALUES ('already_closed'::text, %s::bigint)$$, :'d_closing'),
                  'D: then finds it closed by session a''s certificate');
SELECT is((SELECT count(*)::int FROM dblink_get_result('t83b') AS t(x text)), 0, 'D: session b is done');

SELECT results_eq(
    format($$SELECT count(*)::int, count(DISTINCT (partition, "offset"))::int FROM kafka_lake.coordinate_list
             WHERE source = %L$$, :'source'),
    $$VALUES (9, 9)$$, 'every coordinate landed once');

SELECT * FROM finish();

SELECT dblink_disconnect('t83a') \g /dev/null
SELECT dblink_disconnect('t83b') \g /dev/null
SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t83_kafka CASCADE;
