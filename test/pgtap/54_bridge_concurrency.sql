-- test/pgtap/54_bridge_concurrency.sql -- two sessions bridging one date
--
-- Needs a running test broker (KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR) and
-- the dblink extension: the second session is a dblink connection to this
-- database (over the same socket, as the same user).  Self-contained, not
-- wrapped in a transaction; the explicit transaction below holds the first
-- bridge open while the second one starts.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test54.concurrent.' :tok
\set source 't54_conc_' :tok
\setenv KL_T54_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T54_TOPIC" 1 >/dev/null

DROP SERVER IF EXISTS t54_kafka CASCADE;
CREATE SERVER t54_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't54_kafka', :'topic') \g /dev/null

CREATE FUNCTION pg_temp.event(n int, business_date text) RETURNS bytea
LANGUAGE sql AS $$
    SELECT convert_to(json_build_object(
        'event_id', format('evt-54-%s-%s', business_date, n), 'schema_version', 1,
        'event_time', business_date || 'T12:00:00Z', 'business_date', business_date,
        'plant_id', 'plant-54', 'line_id', 'line-01', 'work_order_id', 'wo-' || n,
        'machine_id', 'm-1', 'product_code', 'prd-a', 'operation', 'calibration',
        'units_produced', n, 'defect_count', 0, 'cycle_time_ms', 100)::text, 'UTF8')
$$;

-- wait (at most 20 s) until a session waits for the bridge lock of
-- (source, date): an advisory lock whose fourth field is 0x4B4D (19277)
CREATE FUNCTION pg_temp.someone_waits(source text, business_date date) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. 200 LOOP
        IF EXISTS (SELECT 1 FROM pg_locks l
                   WHERE l.locktype = 'advisory' AND l.objsubid = 19277 AND NOT l.granted
                     AND l.classid::int = (SELECT source_id FROM kafka_lake.sources s WHERE s.source = $1)
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
SELECT dblink_connect('t54', :'connstr') \g /dev/null

SELECT plan(12);

SELECT is(array[kafka_lake.produce('t54_kafka', :'topic', pg_temp.event(1, '2026-07-25')),
                kafka_lake.produce('t54_kafka', :'topic', pg_temp.event(2, '2026-07-25')),
                kafka_lake.produce('t54_kafka', :'topic', pg_temp.event(3, '2026-07-26'))],
          '{0,1,2}'::bigint[], 'three events of two dates produced');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 3, 'and landed');

-- session 1 bridges 2026-07-25 and keeps its transaction open
BEGIN;
CREATE TEMP TABLE first_call AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-25');
SELECT is((SELECT run_status FROM first_call), 'processed', 'session 1: processed (not yet committed)');

-- session 2 bridges the same date: it waits
SELECT is(dblink_send_query('t54', format(
              $$SELECT run_status, run_id, snapshot_id, snapshot_status FROM kafka_lake.bridge(%L, '2026-07-25')$$,
              :'source')), 1, 'session 2 starts bridging the same date');
SELECT ok(pg_temp.someone_waits(:'source', '2026-07-25'), 'session 2 waits for session 1''s bridge lock');
SELECT is(dblink_is_busy('t54'), 1, 'session 2 is still busy');
COMMIT;

SELECT results_eq(
    $$SELECT * FROM dblink_get_result('t54') AS t(run_status text, run_id text, snapshot_id bigint, snapshot_status text)$$,
    $$SELECT 'skipped'::text, run_id, snapshot_id, 'skipped'::text FROM first_call$$,
    'once session 1 commits, session 2 reports its run as skipped, with the same snapshot');
SELECT is((SELECT count(*)::int FROM dblink_get_result('t54') AS t(x text)), 0, 'session 2 is done');
SELECT results_eq(
    format($$SELECT count(*)::int, count(*) FILTER (WHERE status = 'processed')::int FROM kafka_lake.runs r
             JOIN kafka_lake.sources s USING (source_id) WHERE s.source = %L$$, :'source'),
    $$VALUES (1, 1)$$, 'one run in all');
SELECT is((SELECT count(*)::int FROM kafka_lake.snapshots n JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = :'source'), 1, 'one snapshot in all');

-- another date does not wait for an open bridge, nor does land()
BEGIN;
SELECT kafka_lake.bridge(:'source', '2026-07-25') \g /dev/null
SELECT results_eq(
    format('SELECT * FROM dblink(%L, %L) AS t(run_status text)', 't54',
           format($$SET statement_timeout = '10s'; SELECT run_status FROM kafka_lake.bridge(%L, '2026-07-26')$$,
                  :'source')),
    $$VALUES ('processed'::text)$$,
    'session 2 bridges another date while session 1 holds a bridge of the first one open');
SELECT is((SELECT status FROM dblink('t54', format(
               'SELECT kafka_lake.produce(%L, %L, %L::bytea); SELECT status FROM kafka_lake.land(%L, timeout => ''10 s'')',
               't54_kafka', :'topic', pg_temp.event(4, '2026-07-26'), :'source')) AS t(status text) LIMIT 1),
          'landed', 'and lands the topic: a bridge does not hold partitions it had nothing to recover in');
COMMIT;

SELECT * FROM finish();

SELECT dblink_disconnect('t54') \g /dev/null
SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t54_kafka CASCADE;
