-- test/pgtap/14_threads.sql: a librdkafka handle never outlives the statement that created it,
-- also when the statement errors or is cancelled.  Needs the broker.
SELECT plan(13);
SELECT kl_test.broker('create threads.t1 1');
SELECT kl_test.server('th_ok');
CREATE SERVER th_dead FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:1');
SELECT kafka_lake.create_source('th_ok_src', 'th_ok', 'threads.t1');
SELECT kafka_lake.create_source('th_dead_src', 'th_dead', 'threads.t1');

SELECT kl_test.threads() AS baseline \gset

SELECT lives_ok($$SELECT * FROM kafka_lake.land('th_ok_src')$$, 'a land that works');
SELECT is(kl_test.threads(), :baseline::bigint, 'leaves no thread behind');

SELECT throws_ok($$SELECT * FROM kafka_lake.land('th_dead_src', timeout => '1 s')$$, 'HV00N', NULL,
  'land against a dead broker fails with a connection error');
SELECT is(kl_test.threads(), :baseline::bigint, 'the failed land left no thread behind');

SELECT throws_ok($$SELECT * FROM kafka_lake.replay('th_ok_src', 5, 0, 1)$$, '22023', NULL,
  'replay of a partition the topic does not have fails after asking the broker');
SELECT is(kl_test.threads(), :baseline::bigint, 'the failed replay left no thread behind');

SELECT throws_ok($$SELECT kafka_lake.produce('th_dead', 'threads.t1', '\x01', timeout => '1 s')$$, 'HV00N', NULL,
  'produce to a dead broker fails');
SELECT is(kl_test.threads(), :baseline::bigint, 'the failed produce left no thread behind');

CREATE FUNCTION pg_temp.sqlstate_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN query_canceled THEN
  RETURN SQLSTATE;
END $$;
SET statement_timeout = '300ms';
SELECT pg_temp.sqlstate_of($$SELECT * FROM kafka_lake.land('th_dead_src', timeout => '30 s')$$) AS cancelled \gset
RESET statement_timeout;
SELECT is(:'cancelled'::text, '57014', 'statement_timeout cancels a land that waits for a broker');
SELECT is(kl_test.threads(), :baseline::bigint, 'the cancelled land left no thread behind');

-- an error caught by a PL/pgSQL exception block (a subtransaction)
DO $$
BEGIN
  PERFORM * FROM kafka_lake.land('th_dead_src', timeout => '1 s');
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'caught %', SQLSTATE;
END $$;
SELECT is(kl_test.threads(), :baseline::bigint, 'an error caught in a subtransaction left no thread behind');

SELECT ok(position('SIG' IN kl_test.server_log()) = 0 AND position('terminated by signal' IN kl_test.server_log()) = 0,
  'no backend died on a signal');
SELECT is(kl_test.threads(), 1::bigint, 'a backend runs one thread outside kafka_lake calls');

SELECT kafka_lake.drop_source('th_ok_src', drop_landing => true);
SELECT kafka_lake.drop_source('th_dead_src', drop_landing => true);
DROP SERVER th_ok;
DROP SERVER th_dead;
SELECT * FROM finish();
