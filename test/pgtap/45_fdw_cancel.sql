-- test/pgtap/45_fdw_cancel.sql: statement_timeout and pg_cancel_backend()
-- stop a long scan promptly with SQLSTATE 57014.  The long scan
-- is the foreign table rescanned many times over (each rescan reads and
-- checks every file again).  No absolute time is asserted: a cancelled scan
-- must stop long before the whole scan would end, measured against the same
-- scan in the same run.  Uses dblink for the cancel.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(7);

-- run q; its SQLSTATE ('' when none) and how long it ran
CREATE FUNCTION pg_temp.run(q text, OUT state text, OUT seconds float8) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  state := '';
  BEGIN
    EXECUTE q;
  EXCEPTION WHEN query_canceled OR others THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
  END;
  seconds := extract(epoch FROM clock_timestamp() - t0);
END $$;

\o /dev/null
SELECT kl_test.server('fdw45_kafka');
SELECT kl_test.broker('create fdw45.events 4');
SELECT kafka_lake.create_source('fdw45', 'fdw45_kafka', 'fdw45.events');
SELECT kl_test.fill('fdw45.events', 20000, 4);
SELECT * FROM kafka_lake.land('fdw45');
\o
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw45_records), 20000, '20000 records landed');

-- the long scan: n full scans of the foreign table
CREATE FUNCTION pg_temp.long_scan(n int) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT sum(x.c) FROM generate_series(1, %s) g,
                 LATERAL (SELECT count(event_id) AS c FROM kafka_lake.fdw45_records WHERE g > 0) x', n) $$;
SELECT * FROM pg_temp.run(pg_temp.long_scan(40)) \gset short_
SELECT is(:'short_state'::text, '', 'the scan runs (40 times over)');
SELECT :short_seconds * 100 AS full_seconds \gset
SELECT ok(true, format('(the same scan 4000 times over would take about %s s)', round(:full_seconds::numeric, 1)));

-- statement_timeout
SET statement_timeout = '300ms';
SELECT * FROM pg_temp.run(pg_temp.long_scan(4000)) \gset timeout_
RESET statement_timeout;
SELECT is(:'timeout_state'::text, '57014', 'statement_timeout cancels the long scan: 57014');
SELECT cmp_ok(:timeout_seconds::float8, '<', :full_seconds::float8 / 4,
              'long before the whole scan would have ended');

-- pg_cancel_backend from another session
\o /dev/null
SELECT dblink_connect('fdw45', format('dbname=%s host=%s port=%s user=%s', current_database(),
                                      current_setting('unix_socket_directories'),
                                      current_setting('port'), current_user));
\o
SELECT pid AS other_pid FROM dblink('fdw45', 'SELECT pg_backend_pid()') AS t(pid int) \gset
\o /dev/null
SELECT dblink_send_query('fdw45', pg_temp.long_scan(4000));
SELECT pg_sleep(0.3);
\o
CREATE TEMP TABLE fdw45_cancel AS SELECT clock_timestamp() AS t0, pg_cancel_backend(:other_pid) AS sent;
CREATE FUNCTION pg_temp.result_state(OUT state text, OUT seconds float8) LANGUAGE plpgsql AS $$
BEGIN
  state := '';
  BEGIN
    PERFORM * FROM dblink_get_result('fdw45') AS t(n numeric);
  EXCEPTION WHEN query_canceled OR others THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
  END;
  seconds := extract(epoch FROM clock_timestamp() - (SELECT t0 FROM fdw45_cancel));
END $$;
SELECT * FROM pg_temp.result_state() \gset cancel_
SELECT is(:'cancel_state'::text, '57014', 'pg_cancel_backend cancels the long scan: 57014');
SELECT cmp_ok(:cancel_seconds::float8, '<', :full_seconds::float8 / 4,
              'long before the whole scan would have ended');
\o /dev/null
SELECT dblink_disconnect('fdw45');
\o
SELECT * FROM finish();
