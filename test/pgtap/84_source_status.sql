-- test/pgtap/84_source_status.sql -- kafka_lake.source_status: one row per
-- source and partition from the catalog alone (it answers with the broker
-- down), with the last landing, offsets and lag, batches and bytes on disk,
-- counts, the oldest date not closed and the last error of a failed land()
-- (kept in shared memory: kafka_lake is preloaded in the test cluster); the
-- alert query of docs/closing.md; who may read it and late_events.
--
-- Needs a running test broker (KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR); the
-- faults go to a broker of the test's own.  Self-contained, not wrapped in a
-- transaction.

SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test84.status'
\set source 't84_status_' :tok
SELECT kl_test.private_broker('t84_' || :'tok', :'topic' || ':2') AS pbootstrap \gset
DROP SERVER IF EXISTS t84_kafka CASCADE;
CREATE SERVER t84_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'pbootstrap');
SELECT kafka_lake.create_source(:'source', 't84_kafka', :'topic') \g /dev/null
SELECT set_config('t84.topic', :'topic', false), set_config('t84.source', :'source', false) \g /dev/null

CREATE FUNCTION pg_temp.send(id text, business_date text, part int) RETURNS bigint
LANGUAGE sql AS $$
    SELECT kafka_lake.produce('t84_kafka', current_setting('t84.topic'),
        convert_to(json_build_object(
            'event_id', id, 'schema_version', 1, 'event_time', business_date || 'T09:00:00Z',
            'business_date', business_date, 'plant_id', 'plant-84', 'line_id', 'line-01',
            'work_order_id', 'wo-' || id, 'machine_id', 'm-1', 'product_code', 'prd-a',
            'operation', 'welding', 'units_produced', 1, 'defect_count', 0,
            'cycle_time_ms', 100)::text, 'UTF8'),
        NULL, part)
$$;
CREATE FUNCTION pg_temp.status() RETURNS SETOF kafka_lake.source_status
LANGUAGE sql AS $$ SELECT * FROM kafka_lake.source_status WHERE source = current_setting('t84.source') ORDER BY partition $$;
CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
-- the alert query of docs/closing.md, for this source
CREATE FUNCTION pg_temp.alerts() RETURNS TABLE (partition int, last_status text, oldest_open_date date, last_error text)
LANGUAGE sql AS $$
    SELECT partition, last_status, oldest_open_date, last_error
    FROM kafka_lake.source_status
    WHERE (last_status = 'failed'
           OR lag > 10000
           OR last_call_at < now() - interval '10 minutes'
           OR oldest_open_date < current_date - 2)
      AND source = current_setting('t84.source')
    ORDER BY partition
$$;

SELECT plan(27);

-- a source never landed: one row, nothing known
SELECT results_eq($$SELECT partition, last_status, batches, bytes_on_disk, committed_offset FROM pg_temp.status()$$,
                  $$VALUES (NULL::int, NULL::text, 0::bigint, 0::numeric, NULL::bigint)$$,
                  'a source never landed has one row, with nothing known yet');

-- two dates over two partitions, with a duplicate and a bad record
SELECT pg_temp.send('e1', '2026-10-01', 0), pg_temp.send('e2', '2026-10-01', 1),
       pg_temp.send('e3', '2026-10-02', 1), pg_temp.send('e1', '2026-10-01', 1) \g /dev/null
SELECT kafka_lake.produce('t84_kafka', :'topic', convert_to('not json', 'UTF8'), NULL, 0) \g /dev/null
SELECT is((SELECT sum(records)::int FROM kafka_lake.land(:'source')), 5, 'five records landed');
SELECT results_eq(
    $$SELECT partition, last_status, committed_offset, low_watermark, high_watermark, lag, batches,
             accepted, duplicates, quarantined, accepted_24h, duplicates_24h, quarantined_24h
      FROM pg_temp.status()$$,
    $$VALUES (0, 'landed'::text, 2::bigint, 0::bigint, 2::bigint, 0::bigint, 1::bigint, 1::bigint, 0::bigint, 1::bigint, 1::bigint, 0::bigint, 1::bigint),
             (1, 'landed'::text, 3::bigint, 0::bigint, 3::bigint, 0::bigint, 1::bigint, 2::bigint, 1::bigint, 0::bigint, 2::bigint, 1::bigint, 0::bigint)$$,
    'one row per partition: status, committed offset, watermarks, lag, batches and counts');
SELECT results_eq(
    $$SELECT partition, bytes_on_disk FROM pg_temp.status()$$,
    format($$SELECT p, kl_test.sh(format('find %%s/topic=%%s/partition=%%s -type f -printf ''%%%%s\n'' | paste -sd+ | bc',
                                          kl_test.landing(%L), %L, p))::numeric
             FROM generate_series(0, 1) p$$, :'source', :'topic'),
    'bytes_on_disk is what the partition''s files take on disk');
SELECT ok((SELECT bool_and(last_call_at > now() - interval '1 minute' AND last_batch_at <= last_call_at)
           FROM pg_temp.status()), 'the last call and the last batch are known');
SELECT is((SELECT array_agg(oldest_open_date ORDER BY partition)::text FROM pg_temp.status()),
          '{2026-10-01,2026-10-01}', 'the oldest date not closed, per partition');

-- catalog only: more records, and the broker down, change nothing it shows
SELECT pg_temp.send('e4', '2026-10-02', 0) \g /dev/null
SELECT is((SELECT array_agg(high_watermark ORDER BY partition)::text FROM kafka_lake.lag(:'source')), '{3,3}',
          'the broker has one more record');
SELECT kl_test.private_ctl('t84_' || :'tok', 'down -1') \g /dev/null
SET statement_timeout = '5s';
SELECT is((SELECT array_agg(high_watermark || '/' || lag ORDER BY partition)::text FROM pg_temp.status()),
          '{2/0,3/0}', 'source_status answers with the broker down: the watermarks the last land() read');
RESET statement_timeout;

-- a call that fails before it owns a partition: every partition shows it
SELECT is(pg_temp.error_of(format($$SELECT * FROM kafka_lake.land(%L, timeout => '1 s')$$, :'source')), 'HV00N',
          'land() against the broker that is down fails');
SELECT results_eq($$SELECT partition, last_status, last_error_sqlstate, last_error LIKE 'could not%' FROM pg_temp.status()$$,
                  $$VALUES (0, 'failed'::text, 'HV00N'::text, true), (1, 'failed'::text, 'HV00N'::text, true)$$,
                  'every partition shows the failed call and its error, though its transaction rolled back');
SELECT ok((SELECT bool_and(last_error_at > last_call_at) FROM pg_temp.status()), 'newer than the last call');
SELECT results_eq($$SELECT partition, last_status FROM pg_temp.alerts()$$,
                  $$VALUES (0, 'failed'::text), (1, 'failed'::text)$$, 'the alert query reports both partitions');
SELECT kl_test.private_ctl('t84_' || :'tok', 'up -1') \g /dev/null

-- a call that fails in a partition: that partition shows it
SET kafka_lake.fault_injection = 'after_staging_write';
SELECT is(pg_temp.error_of(format($$SELECT * FROM kafka_lake.land(%L, timeout => '20 s')$$, :'source')), 'XX000',
          'a land() that fails in partition 0');
RESET kafka_lake.fault_injection;
SELECT results_eq($$SELECT partition, last_status, last_error FROM pg_temp.status() WHERE partition = 0$$,
                  $$VALUES (0, 'failed'::text, 'kafka_lake fault injection: after_staging_write'::text)$$,
                  'partition 0 shows the error it failed with');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source', timeout => '20 s')), 1, 'the next land() succeeds');
SELECT results_eq($$SELECT partition, last_status, high_watermark, lag FROM pg_temp.status()$$,
                  $$VALUES (0, 'landed'::text, 3::bigint, 0::bigint), (1, 'empty'::text, 3::bigint, 0::bigint)$$,
                  'and the partitions show it: the error is older than the last call');
SELECT is((SELECT count(*)::int FROM pg_temp.status() WHERE last_error IS NOT NULL), 2,
          'the last error stays readable, with its time');

-- closing the oldest date moves the oldest open date
SELECT results_eq(format($$SELECT status FROM kafka_lake.close_date(%L, '2026-10-01', timeout => '20 s')$$, :'source'),
                  $$VALUES ('closed'::text)$$, 'the oldest date is closed');
SELECT is((SELECT array_agg(oldest_open_date ORDER BY partition)::text FROM pg_temp.status()),
          '{2026-10-02,2026-10-02}', 'the oldest date not closed is the next one');
SELECT results_eq($$SELECT partition, last_status, oldest_open_date FROM pg_temp.alerts()$$,
                  $$VALUES (0, 'empty'::text, '2026-10-02'::date), (1, 'empty'::text, '2026-10-02'::date)$$,
                  'the alert query reports the date left open for more than two days (the close''s landing found nothing new)');

-- who may read the views
CREATE ROLE t84_monitor;
GRANT USAGE ON SCHEMA kafka_lake TO t84_monitor;
SET ROLE t84_monitor;
SELECT is(pg_temp.error_of('SELECT * FROM kafka_lake.source_status'), '42501', 'a role without a grant may not read source_status');
SELECT is(pg_temp.error_of('SELECT * FROM kafka_lake.source_errors()'), '42501', 'nor call the function behind it');
SELECT is(pg_temp.error_of('SELECT * FROM kafka_lake.late_event_list()'), '42501', 'nor the one behind late_events');
RESET ROLE;
GRANT SELECT ON kafka_lake.source_status, kafka_lake.late_events TO t84_monitor;
SET ROLE t84_monitor;
SELECT is((SELECT count(*)::int FROM kafka_lake.source_status WHERE source = current_setting('t84.source')
           AND last_error_sqlstate IS NOT NULL AND last_error IS NULL), 2,
          'SELECT on the view is all a monitoring role needs to see the errors'' SQLSTATE and time, not their text');
SELECT is(pg_temp.error_of('SELECT * FROM kafka_lake.late_events'), 'no error', 'and on late_events');
RESET ROLE;
SELECT set_config('t84.grant', format('GRANT SELECT ON kafka_lake.%I TO t84_monitor', current_setting('t84.source') || '_records'), false) \g /dev/null
DO $$BEGIN EXECUTE current_setting('t84.grant'); END$$;
SET ROLE t84_monitor;
SELECT is((SELECT count(*)::int FROM kafka_lake.source_status WHERE source = current_setting('t84.source')
           AND last_error IS NOT NULL), 2, 'a role that may read the source sees the text of its errors too');
RESET ROLE;
DO $$BEGIN EXECUTE replace(replace(current_setting('t84.grant'), 'GRANT', 'REVOKE'), ' TO ', ' FROM '); END$$;
REVOKE ALL ON kafka_lake.source_status, kafka_lake.late_events FROM t84_monitor;
REVOKE USAGE ON SCHEMA kafka_lake FROM t84_monitor;
DROP ROLE t84_monitor;

-- a dropped source leaves no row
SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
SELECT is((SELECT count(*)::int FROM kafka_lake.partition_state s
           WHERE NOT EXISTS (SELECT 1 FROM kafka_lake.sources r WHERE r.source_id = s.source_id)), 0,
          'drop_source removes the source''s partition_state');

SELECT * FROM finish();

DROP SERVER t84_kafka CASCADE;
