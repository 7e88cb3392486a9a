-- test/pgtap/62_commit_timeout.sql: the broker goes down at the commit step (a trigger on the
-- catalog takes it down right after a batch is recorded, just before the offset commit).
--  * land()'s own timeout ends the commit: HV00N with a hint about the broker (not librdkafka's
--    synchronous commit sitting out its own ~45 s and failing HV000);
--  * statement_timeout and pg_cancel_backend() end it: 57014;
--  * nothing is lost: once the broker is back, the next land reuses the durable batches and
--    commits them.
-- No absolute time is asserted; a guard statement_timeout far above the land's own timeout turns
-- a commit that ignores its timeout into the wrong SQLSTATE.  Uses a broker of its own and dblink.
SET client_min_messages = warning;
SELECT plan(11);
SELECT kl_test.private_broker('ct62', 'ct62.t:1') AS ct_bootstrap \gset
CREATE SERVER ct62_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'ct_bootstrap');
SELECT kafka_lake.create_source('ct62', 'ct62_srv', 'ct62.t');
SELECT (SELECT value FROM kl_test.env WHERE name = 'broker_dir') || '.ct62/at-commit' AS marker \gset
CREATE TABLE kl_test.ct62_env (marker text);
INSERT INTO kl_test.ct62_env VALUES (:'marker');

-- take the broker down when a batch landed by land() is recorded, i.e. right before its commit
CREATE FUNCTION kl_test.ct62_down() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.landed_by = 'land' AND NEW.source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'ct62') THEN
    PERFORM kl_test.private_ctl('ct62', 'down -1');
    PERFORM kl_test.sh('touch ' || (SELECT marker FROM kl_test.ct62_env));
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ct62_down AFTER INSERT ON kafka_lake.batches FOR EACH ROW EXECUTE FUNCTION kl_test.ct62_down();

CREATE FUNCTION pg_temp.error_of(sql text, OUT state text, OUT message text, OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
  state := ''; message := ''; detail := ''; hint := '';
  EXECUTE sql;
EXCEPTION WHEN query_canceled OR others THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                          detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
END $$;

-- 1. the call's own timeout
SELECT kafka_lake.produce('ct62_srv', 'ct62.t', kl_test.event('evt-ct62-1'));
SET statement_timeout = '40s';		-- the guard: far above the land's own timeout
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.land('ct62', timeout => '2 s')$$) \gset own_
RESET statement_timeout;
SELECT is(:'own_state'::text, 'HV00N', 'a commit the broker cannot take ends with the call''s timeout: HV00N');
SELECT alike(:'own_hint'::text, 'Check that the brokers of server "ct62_srv" are up%', 'with a hint about the broker');
SELECT alike(:'own_detail'::text, '%offsets 0 to 0 of partition 0 (1 batch) landed but were not committed%',
             'and a detail that says the batch landed but was not committed');
SELECT kl_test.private_ctl('ct62', 'up -1');

-- 2. statement_timeout
SELECT kafka_lake.produce('ct62_srv', 'ct62.t', kl_test.event('evt-ct62-2'));
SELECT kl_test.sh('rm -f ' || :'marker');
SET statement_timeout = '5s';
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.land('ct62', timeout => '10 min')$$) \gset stmt_
RESET statement_timeout;
SELECT is(:'stmt_state'::text || ' ' || :'stmt_message'::text, '57014 canceling statement due to statement timeout',
          'statement_timeout ends a commit the broker cannot take: 57014');
SELECT isnt((pg_stat_file(:'marker', true)).size, NULL, '(the land had reached the commit)');
SELECT kl_test.private_ctl('ct62', 'up -1');

-- 3. pg_cancel_backend from another session
SELECT kafka_lake.produce('ct62_srv', 'ct62.t', kl_test.event('evt-ct62-3'));
SELECT kl_test.sh('rm -f ' || :'marker');
SELECT dblink_connect('ct62', format('dbname=%s host=%s port=%s', current_database(),
                                     current_setting('unix_socket_directories'), current_setting('port')));
SELECT pid AS other_pid FROM dblink('ct62', 'SELECT pg_backend_pid()') AS t(pid int) \gset
SELECT dblink_exec('ct62', 'SET statement_timeout = ''40s''');
-- the trigger's shell helper keeps its output in a temporary table: create it now, since the
-- trigger runs inside kafka_lake's catalog section, where no temporary table can be created
SELECT * FROM dblink('ct62', $$SELECT kl_test.sh('true')$$) AS t(out text);
SELECT dblink_send_query('ct62', $$SELECT count(*) FROM kafka_lake.land('ct62', timeout => '10 min')$$);
DO $$
BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN (pg_stat_file((SELECT marker FROM kl_test.ct62_env), true)).size IS NOT NULL;
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT isnt((pg_stat_file(:'marker', true)).size, NULL, '(the other session reached the commit)');
SELECT pg_sleep(0.5);
SELECT ok(pg_cancel_backend(:other_pid), '(cancel sent)');
CREATE TABLE pg_temp.cancel_result (state text);
DO $$
BEGIN
  PERFORM * FROM dblink_get_result('ct62') AS t(n bigint);
  INSERT INTO pg_temp.cancel_result VALUES ('');
EXCEPTION WHEN query_canceled OR others THEN
  INSERT INTO pg_temp.cancel_result VALUES (SQLSTATE || ' ' || SQLERRM);
END $$;
SELECT alike((SELECT state FROM pg_temp.cancel_result), '57014 %canceling statement due to user request%',
             'pg_cancel_backend ends the commit: 57014');
SELECT dblink_disconnect('ct62');
SELECT kl_test.private_ctl('ct62', 'up -1');

-- nothing was lost
DROP TRIGGER ct62_down ON kafka_lake.batches;
SELECT results_eq($$SELECT status, records, reused, committed_offset FROM kafka_lake.land('ct62', timeout => '20 s')$$,
                  $$VALUES ('reused', 3, 3, 3::bigint)$$,
                  'with the broker back, land reuses the three durable batches and commits');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'ct62'), 3::bigint, 'each coordinate once');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('ct62')$$, 'verify finds nothing wrong');

DROP FUNCTION kl_test.ct62_down();
DROP TABLE kl_test.ct62_env;
SELECT kafka_lake.drop_source('ct62', drop_landing => true);
SELECT kl_test.private_ctl('ct62', 'shutdown');
SELECT * FROM finish();
