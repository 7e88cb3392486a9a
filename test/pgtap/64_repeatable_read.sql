-- test/pgtap/64_repeatable_read.sql: land(), replay() and recover() in a REPEATABLE READ
-- transaction whose snapshot predates another session's landing of the same partition.  The
-- transaction cannot see the other session's batches, so it cannot land correctly: it must
-- refuse with 40001 (serialization_failure) and a hint, not a raw unique violation, and leave
-- nothing behind; retried, the call works.  Uses dblink.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(10);
SELECT kl_test.broker('create rr64.t 1');
SELECT kl_test.server('rr64_srv');
SELECT kafka_lake.create_source('rr64', 'rr64_srv', 'rr64.t');
SELECT count(*) FROM kafka_lake.land('rr64');	-- the cluster id is remembered
SELECT kafka_lake.produce('rr64_srv', 'rr64.t', kl_test.event(format('evt-rr64-%s', n))) FROM generate_series(1, 3) n;
SELECT dblink_connect('rr64', format('dbname=%s host=%s port=%s', current_database(),
                                     current_setting('unix_socket_directories'), current_setting('port')));

CREATE FUNCTION pg_temp.error_of(sql text, OUT state text, OUT message text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
  state := ''; message := ''; hint := '';
  EXECUTE sql;
EXCEPTION WHEN query_canceled OR others THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
END $$;

-- land
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM kafka_lake.batches;		-- takes the snapshot
SELECT * FROM dblink('rr64', $$SELECT count(*) FROM kafka_lake.land('rr64')$$) AS t(n bigint);
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.land('rr64')$$) \gset land_
COMMIT;
SELECT is(:'land_state'::text, '40001', 'land under a snapshot older than another session''s landing: 40001');
SELECT alike(:'land_hint'::text, '%READ COMMITTED%', 'with a hint to use READ COMMITTED or retry');
SELECT results_eq($$SELECT status, committed_offset FROM kafka_lake.land('rr64')$$,
                  $$VALUES ('empty', 3::bigint)$$, 'retried, land finds the other session''s landing');

-- replay
SELECT kafka_lake.produce('rr64_srv', 'rr64.t', kl_test.event(format('evt-rr64-%s', n))) FROM generate_series(4, 5) n;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM kafka_lake.batches;
SELECT * FROM dblink('rr64', $$SELECT count(*) FROM kafka_lake.land('rr64')$$) AS t(n bigint);
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.replay('rr64', 0, 3, 4)$$) \gset replay_
COMMIT;
SELECT is(:'replay_state'::text, '40001', 'replay under such a snapshot: 40001');
SELECT results_eq($$SELECT status, reused FROM kafka_lake.replay('rr64', 0, 3, 4)$$,
                  $$VALUES ('reused', 2)$$, 'retried, replay finds the offsets landed');

-- recover, with a batch on disk that the other session adopts
SELECT kafka_lake.produce('rr64_srv', 'rr64.t', kl_test.event('evt-rr64-6'));
SET kafka_lake.fault_injection = 'after_rename';
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.land('rr64')$$);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM kafka_lake.batches;
SELECT * FROM dblink('rr64', $$SELECT count(*) FROM kafka_lake.recover('rr64')$$) AS t(n bigint);
SELECT * FROM pg_temp.error_of($$SELECT * FROM kafka_lake.recover('rr64')$$) \gset recover_
COMMIT;
SELECT is(:'recover_state'::text, '40001', 'recover under such a snapshot: 40001');
SELECT is_empty($$SELECT * FROM kafka_lake.recover('rr64')$$, 'retried, recover finds nothing left to do');

-- a REPEATABLE READ transaction that nobody overtook lands as usual
SELECT kafka_lake.produce('rr64_srv', 'rr64.t', kl_test.event('evt-rr64-7'));
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM kafka_lake.batches;
SELECT results_eq($$SELECT status, records, reused, committed_offset FROM kafka_lake.land('rr64')$$,
                  $$VALUES ('landed', 2, 1, 7::bigint)$$, 'land in REPEATABLE READ works when nobody landed meanwhile');
COMMIT;

SELECT is((SELECT count(DISTINCT (partition, "offset")) || '/' || count(*) FROM kafka_lake.coordinate_list WHERE source = 'rr64'),
          '7/7', 'seven coordinates, each once');
SELECT is_empty($$SELECT * FROM kafka_lake.verify('rr64')$$, 'verify finds nothing wrong');
SELECT dblink_disconnect('rr64');
SELECT kafka_lake.drop_source('rr64', drop_landing => true);
SELECT * FROM finish();
