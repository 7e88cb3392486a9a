-- test/pgtap/82_close_refusals.sql -- a date that cannot be certified is not
-- closed, with an error naming the partition that is behind and why: the
-- broker down, a fetch the broker refuses, a partition another session is
-- landing, records expired before they landed, the timeout; and a date whose
-- checks fail, or with no event below the marks.  Each refusal leaves no
-- certificate and no snapshot; what landed stays landed, and the date closes
-- once the cause is gone.
--
-- Needs a running test broker (KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR) and
-- dblink (the session that holds a partition).  The broker faults go to a
-- broker of the test's own.  Self-contained, not wrapped in a transaction.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test82.refuse.' :tok
\set source 't82_refuse_' :tok
\set ptopic 'kafka_lake.test82.private'
\set psource 't82_private_' :tok
\setenv KL_T82_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T82_TOPIC" 2 >/dev/null

DROP SERVER IF EXISTS t82_kafka CASCADE;
CREATE SERVER t82_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't82_kafka', :'topic') \g /dev/null
SELECT kl_test.private_broker('t82_' || :'tok', :'ptopic' || ':2') AS pbootstrap \gset
DROP SERVER IF EXISTS t82_private CASCADE;
CREATE SERVER t82_private FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'pbootstrap');
SELECT kafka_lake.create_source(:'psource', 't82_private', :'ptopic') \g /dev/null
SELECT set_config('t82.tok', :'tok', false) \g /dev/null

CREATE FUNCTION pg_temp.event(id text, business_date text, event_time text DEFAULT NULL) RETURNS bytea
LANGUAGE sql AS $$
    SELECT convert_to(json_build_object(
        'event_id', id, 'schema_version', 1,
        'event_time', coalesce(event_time, business_date || 'T09:00:00Z'),
        'business_date', business_date, 'plant_id', 'plant-82', 'line_id', 'line-01',
        'work_order_id', 'wo-' || id, 'machine_id', 'm-1', 'product_code', 'prd-a',
        'operation', 'welding', 'units_produced', 1, 'defect_count', 0,
        'cycle_time_ms', 100)::text, 'UTF8')
$$;

-- the SQLSTATE, message, detail and hint of the error a statement raises
CREATE FUNCTION pg_temp.error_of(sql text, OUT state text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    state := 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                            detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;

-- certificates and snapshots of a source
CREATE FUNCTION pg_temp.closed(source text) RETURNS text
LANGUAGE sql AS $$
    SELECT (SELECT count(*) FROM kafka_lake.date_closings c WHERE c.source_id = s.source_id) || ' certificates, '
        || (SELECT count(*) FROM kafka_lake.snapshots n WHERE n.source_id = s.source_id) || ' snapshots'
    FROM kafka_lake.sources s WHERE s.source = $1
$$;

SELECT format('dbname=%s host=%s port=%s user=%s', current_database(),
              split_part(current_setting('unix_socket_directories'), ',', 1),
              current_setting('port'), current_user) AS connstr \gset
SELECT dblink_connect('t82', :'connstr') \g /dev/null

SELECT plan(31);

-- arguments
SELECT throws_ok($$SELECT * FROM kafka_lake.close_date(NULL, '2026-08-20')$$, '22004', NULL, 'a null source is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.close_date('x', NULL)$$, '22004', NULL, 'a null date is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.close_date('x', 'infinity')$$, '22023', NULL, 'an infinite date is refused');
SELECT throws_ok($$SELECT * FROM kafka_lake.close_date('no_such_source_82', '2026-08-20')$$, '42704', NULL,
                 'an unknown source is refused');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-20', timeout => '0 s')$$, :'source'),
                 '22023', NULL, 'a timeout of zero is refused');

-- the broker down: the marks cannot be read
SELECT kafka_lake.produce('t82_private', :'ptopic', pg_temp.event('p1', '2026-08-20'), NULL, 0) \g /dev/null
SELECT kafka_lake.produce('t82_private', :'ptopic', pg_temp.event('p2', '2026-08-20'), NULL, 1) \g /dev/null
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'psource')), 2, 'two events landed on the private broker');
SELECT kl_test.private_ctl('t82_' || :'tok', 'down -1') \g /dev/null
SET statement_timeout = '60s';		-- a guard: the call must end by itself, long before
SELECT results_eq(
    format($$SELECT state, message FROM pg_temp.error_of(%L)$$,
           format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-20', timeout => '2 s')$$, :'psource')),
    format($$VALUES ('HV00N'::text, 'business date 2026-08-20 of source "%s" was not closed: the marks of its partitions could not be read'::text)$$,
           :'psource'),
    'with the broker down, close_date refuses with HV00N: the marks could not be read');
RESET statement_timeout;
SELECT is(pg_temp.closed(:'psource'), '0 certificates, 0 snapshots', 'nothing was closed');
SELECT kl_test.private_ctl('t82_' || :'tok', 'up -1') \g /dev/null

-- a fetch the broker refuses: the partition being landed is named
SELECT kafka_lake.produce('t82_private', :'ptopic', pg_temp.event('p3', '2026-08-20'), NULL, 0) \g /dev/null
SELECT kl_test.private_ctl('t82_' || :'tok', 'errors Fetch 50 TOPIC_AUTHORIZATION_FAILED') \g /dev/null
SET statement_timeout = '60s';
SELECT matches(
    (SELECT state || ' ' || message FROM pg_temp.error_of(
        format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-20', timeout => '5 s')$$, :'psource'))),
    format('^[0-9A-Z]{5} business date 2026-08-20 of source "%s" was not closed: partition 0 of topic "%s" could not be landed up to its mark 2$',
           :'psource', :'ptopic'),
    'a fetch the broker refuses names the partition and its mark');
RESET statement_timeout;
SELECT kl_test.private_ctl('t82_' || :'tok', 'clear Fetch') \g /dev/null
SELECT is(pg_temp.closed(:'psource'), '0 certificates, 0 snapshots', 'nothing was closed');
SELECT results_eq(format($$SELECT status, selected_events FROM kafka_lake.close_date(%L, '2026-08-20', timeout => '20 s')$$, :'psource'),
                  $$VALUES ('closed'::text, 3)$$, 'once the broker serves the partition again, the date closes');

-- the timeout ends while a partition is being landed (its fetches keep failing)
SELECT kafka_lake.produce('t82_private', :'ptopic', pg_temp.event('p4', '2026-08-20'), NULL, 1) \g /dev/null
SELECT kl_test.private_ctl('t82_' || :'tok', 'errors Fetch 100000 REQUEST_TIMED_OUT') \g /dev/null
SET statement_timeout = '60s';
CREATE TEMP TABLE e0 AS SELECT * FROM pg_temp.error_of(
    format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-20', timeout => '2 s')$$, :'psource'));
RESET statement_timeout;
SELECT kl_test.private_ctl('t82_' || :'tok', 'clear Fetch') \g /dev/null
SELECT results_eq($$SELECT state, message FROM e0$$,
    format($$VALUES ('55000'::text, 'business date 2026-08-20 of source "%s" was not closed: partition 1 of topic "%s" is landed up to offset 1, short of its mark 2'::text)$$,
           :'psource', :'ptopic'),
    'the timeout ends the landing of a partition short of its mark: 55000, naming it');
SELECT matches((SELECT detail FROM e0), '^The timeout of 2000 ms ended before the landing reached the mark',
               'the detail says why');
SELECT results_eq(
    format($$SELECT status, selected_events, closing_id > %s FROM kafka_lake.close_date(%L, '2026-08-20', timeout => '20 s')$$,
           (SELECT max(closing_id) FROM kafka_lake.date_closings), :'psource'),
    $$VALUES ('closed'::text, 4, true)$$, 'with the broker serving again, the date closes with the new event');

-- a partition another session is landing, until the timeout
SELECT kafka_lake.produce('t82_kafka', :'topic', pg_temp.event('a1', '2026-08-21'), NULL, 0) \g /dev/null
SELECT kafka_lake.produce('t82_kafka', :'topic', pg_temp.event('a2', '2026-08-21'), NULL, 1) \g /dev/null
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 2, 'two events landed');
SELECT kafka_lake.produce('t82_kafka', :'topic', pg_temp.event('a3', '2026-08-21'), NULL, 1) \g /dev/null
SELECT dblink_exec('t82', 'BEGIN') \g /dev/null
SELECT * FROM dblink('t82', format($$SELECT count(*) FROM kafka_lake.land(%L)$$, :'source')) AS t(n bigint) \g /dev/null
CREATE TEMP TABLE e1 AS SELECT * FROM pg_temp.error_of(
    format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-21', timeout => '1 s')$$, :'source'));
SELECT results_eq($$SELECT state, message FROM e1$$,
    format($$VALUES ('55000'::text, 'business date 2026-08-21 of source "%s" was not closed: partition 1 of topic "%s" is landed up to offset 1, short of its mark 2'::text)$$,
           :'source', :'topic'),
    'a partition another session is landing: 55000, naming it, how far it is landed and its mark (partition 0, complete, is not waited for)');
SELECT matches((SELECT detail FROM e1), '^Another session was landing the partition until the timeout',
               'the detail says why');
SELECT matches((SELECT hint FROM e1), 'pg_locks shows its lock', 'the hint says where to look');
SELECT is(pg_temp.closed(:'source'), '0 certificates, 0 snapshots', 'nothing was closed');
SELECT dblink_exec('t82', 'COMMIT') \g /dev/null
CREATE TEMP TABLE c1 AS SELECT * FROM kafka_lake.close_date(:'source', '2026-08-21');
SELECT results_eq($$SELECT status, selected_events FROM c1$$, $$VALUES ('closed'::text, 3)$$,
                  'once the other session committed, the date closes with what it landed');

-- a date whose checks fail cannot be certified
SELECT kafka_lake.produce('t82_kafka', :'topic', pg_temp.event('q1', '2026-08-22', '2026-08-10T09:00:00Z'), NULL, 0) \g /dev/null
SELECT results_eq(
    format($$SELECT state, message FROM pg_temp.error_of(%L)$$,
           format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-22')$$, :'source')),
    format($$VALUES ('55000'::text, 'business date 2026-08-22 of source "%s" was not closed: 1 of 8 quality checks failed'::text)$$,
           :'source'),
    'a date that fails a quality check is not closed');
SELECT is(pg_temp.closed(:'source'), '1 certificates, 1 snapshots', 'and gets no certificate or snapshot');
SELECT results_eq(format($$SELECT run_status, quality_passed FROM kafka_lake.bridge(%L, '2026-08-22')$$, :'source'),
                  $$VALUES ('failed_quality'::text, 7)$$, 'bridge() shows the failed check, as the hint says');

-- no event below the marks
SELECT results_eq(
    format($$SELECT state, message FROM pg_temp.error_of(%L)$$,
           format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-23')$$, :'source')),
    format($$VALUES ('P0002'::text, 'business date 2026-08-23 of source "%s" has no accepted event below the marks'::text)$$,
           :'source'),
    'a date without events below the marks is P0002');

-- records expired before they landed
\set etopic 'kafka_lake.test82.expire.' :tok
\set esource 't82_expire_' :tok
\setenv KL_T82_ETOPIC :etopic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T82_ETOPIC" 1 >/dev/null
SELECT kafka_lake.create_source(:'esource', 't82_kafka', :'etopic') \g /dev/null
SELECT kafka_lake.produce('t82_kafka', :'etopic', pg_temp.event('x1', '2026-08-24'), NULL, 0) \g /dev/null
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'esource')), 1, 'one event landed');
SELECT kl_test.fill(:'etopic', 30000, 1, 11, '--compression none') \g /dev/null
CREATE TEMP TABLE e2 AS SELECT * FROM pg_temp.error_of(
    format($$SELECT * FROM kafka_lake.close_date(%L, '2026-08-24')$$, :'esource'));
SELECT results_eq($$SELECT state, message FROM e2$$,
    format($$VALUES ('55000'::text, 'business date 2026-08-24 of source "%s" was not closed: partition 0 of topic "%s" could not be landed up to its mark 30001'::text)$$,
           :'esource', :'etopic'),
    'records expired before they landed: 55000, naming the partition and its mark');
SELECT matches((SELECT detail FROM e2), 'The consumer group is at offset 1 of the partition\. Landing it failed with: offsets 1 to [0-9]+ of partition 0 of topic "[^"]+" expired on the broker before they landed',
               'the detail says how far the group is and which offsets expired');
SELECT matches((SELECT hint FROM e2), 'allow_expired => true', 'the hint is land()''s');
SELECT is(pg_temp.closed(:'esource'), '0 certificates, 0 snapshots', 'nothing was closed');
SELECT is((SELECT committed_offset FROM kafka_lake.lag(:'esource')), 1::bigint, 'and nothing was committed');

-- once the loss is accepted (and recorded), the date closes
SELECT * FROM kafka_lake.land(:'esource', allow_expired => true, max_records => 1) \g /dev/null
SELECT results_eq(format($$SELECT status, selected_events FROM kafka_lake.close_date(%L, '2026-08-24', timeout => '60 s')$$, :'esource'),
                  $$VALUES ('closed'::text, 1)$$, 'once the loss is recorded with allow_expired, the date closes');

SELECT * FROM finish();

SELECT dblink_disconnect('t82') \g /dev/null
SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
SELECT kafka_lake.drop_source(:'esource', drop_landing => true) \g /dev/null
SELECT kafka_lake.drop_source(:'psource', drop_landing => true) \g /dev/null
DROP SERVER t82_kafka CASCADE;
DROP SERVER t82_private CASCADE;
