-- test/pgtap/26_broker_faults.sql: faults injected at the broker.
--  * OffsetCommit errors: land raises an ERROR, the batch stays durable, the next land reports it
--    reused and commits (I1).
--  * Broker down: an ERROR with an SQLSTATE and a hint within the timeout, nothing lost; it works
--    again when the broker is back.
-- Uses a broker of its own, so that its faults cannot leak into other tests.
SELECT plan(12);
SELECT kl_test.private_broker('bf', 'bf.t:1') AS bf_bootstrap \gset
CREATE SERVER bf_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bf_bootstrap');
SELECT kafka_lake.create_source('bf_src', 'bf_srv', 'bf.t');
SELECT kafka_lake.produce('bf_srv', 'bf.t', kl_test.event(format('evt-bf-%s', n))) FROM generate_series(1, 5) n;

-- a non-retriable OffsetCommit error (INVALID_COMMIT_OFFSET_SIZE)
SELECT kl_test.private_ctl('bf', 'errors OffsetCommit 1');
SELECT throws_like($$SELECT * FROM kafka_lake.land('bf_src')$$,
                   'could not commit the consumer group''s offset%', 'a failed commit fails the land');
SELECT is((SELECT count(*) FROM pg_ls_dir(kl_test.landing('bf_src') || '/topic=bf.t/partition=0')), 1::bigint,
          'the batch is durable on disk all the same');
SELECT is((SELECT committed_offset FROM kafka_lake.lag('bf_src')), NULL::bigint, 'nothing was committed');
SELECT results_eq($$SELECT status, records, reused, committed_offset FROM kafka_lake.land('bf_src')$$,
                  $$VALUES ('reused', 5, 5, 5::bigint)$$,
                  'the next land reuses the durable batch and commits');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'bf_src'), 5::bigint,
          'each coordinate landed once');

-- the broker goes down
SELECT kafka_lake.produce('bf_srv', 'bf.t', kl_test.event(format('evt-bf-%s', n))) FROM generate_series(6, 8) n;
SELECT kl_test.private_ctl('bf', 'down -1');
SET statement_timeout = '60s';		-- a guard: the land must end by itself, long before
SELECT throws_ok($$SELECT * FROM kafka_lake.land('bf_src', timeout => '3 s')$$, 'HV00N', NULL,
                 'land against a broker that is down ends with a connection error');
RESET statement_timeout;
CREATE FUNCTION pg_temp.hint_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
  RETURN h;
END $$;
SELECT alike(pg_temp.hint_of($$SELECT * FROM kafka_lake.land('bf_src', timeout => '2 s')$$),
            'Check that the brokers of server "bf_srv" are up%',
            'and a hint that says what to do');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'bf_src'), 5::bigint,
          'nothing landed was lost');
SELECT kl_test.private_ctl('bf', 'up -1');
SELECT results_eq($$SELECT status, records, accepted, committed_offset FROM kafka_lake.land('bf_src', timeout => '20 s')$$,
                  $$VALUES ('landed', 3, 3, 8::bigint)$$,
                  'when the broker is back, land goes on from the committed offset');

-- latency at the broker only slows things down
SELECT kl_test.private_ctl('bf', 'rtt -1 200');
SELECT kafka_lake.produce('bf_srv', 'bf.t', kl_test.event('evt-bf-9'));
SELECT results_eq($$SELECT status, records, committed_offset FROM kafka_lake.land('bf_src', timeout => '20 s')$$,
                  $$VALUES ('landed', 1, 9::bigint)$$, 'a slow broker still lands');
SELECT kl_test.private_ctl('bf', 'rtt -1 0');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('bf_src')$$, 'verify finds nothing wrong');
SELECT is((SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'bf_src'), 9::bigint,
          'nine coordinates, each once');
SELECT kl_test.private_ctl('bf', 'shutdown');
SELECT * FROM finish();
