-- test/pgtap/36_two_phase.sql: PREPARE TRANSACTION and kafka_lake's files.  A step whose
-- effect on the landing depends on how the transaction ends cannot be carried through
-- two-phase commit (the pending work lives in the session, not in the prepared transaction):
-- PREPARE TRANSACTION is refused after drop_source(drop_landing => true), after bridge() and
-- after a create_source that re-used a dropped directory, and the session's next COMMIT
-- removes nothing.  Steps that do not depend on the end of the transaction (land(), whose files
-- and Kafka commits are never undone) can be prepared; ROLLBACK PREPARED then acts like a
-- ROLLBACK.  Needs the broker, dblink and max_prepared_transactions > 0.
SET client_min_messages = warning;
SELECT plan(14);

CREATE FUNCTION pg_temp.error_of(conn text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text;
BEGIN
  PERFORM dblink_exec(conn, q);
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
  RETURN st || ': ' || msg || ' HINT: ' || coalesce(hint, '');
END $$;

-- undo what an old build let through, so that the rest of the file still runs
CREATE FUNCTION pg_temp.rollback_prepared(gid text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_prepared_xacts p WHERE p.gid = rollback_prepared.gid) THEN
    PERFORM dblink_exec('tp36b', format('ROLLBACK PREPARED %L', gid));
  END IF;
END $$;

CREATE FUNCTION pg_temp.missing_dirs(src text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
   WHERE s.source = src
     AND pg_stat_file(format('%s/topic=%s/partition=%s/batch=%s', kl_test.landing(src), b.topic,
                             b.partition, b.batch_id), true) IS NULL
$$;

SELECT format('dbname=%s host=%s port=%s', current_database(), current_setting('unix_socket_directories'),
              current_setting('port')) AS conninfo \gset
\o /dev/null
SELECT dblink_connect('tp36', :'conninfo');
SELECT dblink_connect('tp36b', :'conninfo');
SELECT dblink_exec('tp36', 'SET client_min_messages = warning');
SELECT kl_test.server('tp36_kafka');
SELECT kl_test.broker('create tp36.t 1');
SELECT kafka_lake.create_source('tp36', 'tp36_kafka', 'tp36.t');
SELECT kafka_lake.produce('tp36_kafka', 'tp36.t', kl_test.event('evt-tp36-' || n)) FROM generate_series(1, 4) n;
SELECT * FROM kafka_lake.land('tp36');
\o
SELECT is(current_setting('max_prepared_transactions')::int > 0, true, '(prepared transactions are enabled)');

-- drop_source(drop_landing => true), then PREPARE
SELECT dblink_exec('tp36', 'BEGIN');
SELECT * FROM dblink('tp36', $$SELECT kafka_lake.drop_source('tp36', drop_landing => true)::text$$) AS t(r text);
SELECT matches(pg_temp.error_of('tp36', $$PREPARE TRANSACTION 'kl_tp36_drop'$$),
               '^0A000: cannot PREPARE a transaction that .* HINT: .+',
               'PREPARE TRANSACTION after drop_source(drop_landing => true) is refused with 0A000 and a hint');
SELECT pg_temp.rollback_prepared('kl_tp36_drop');
SELECT is((SELECT count(*) FROM kafka_lake.sources WHERE source = 'tp36'), 1::bigint, 'the source stays');
-- (a refused PREPARE rolls the transaction back) an unrelated transaction of the same
-- session commits
SELECT dblink_exec('tp36', 'BEGIN');
SELECT dblink_exec('tp36', 'CREATE TEMP TABLE tp36_unrelated (i int)');
SELECT dblink_exec('tp36', 'COMMIT');
SELECT is(pg_temp.missing_dirs('tp36'), 0::bigint,
          'the session''s next COMMIT removes none of the source''s files');
SELECT is((SELECT count(*) FROM kafka_lake.tp36_records), 4::bigint, 'the records still read');

-- bridge(), then PREPARE: its files would be removed at ROLLBACK PREPARED by nobody
SELECT dblink_exec('tp36', 'BEGIN');
SELECT * FROM dblink('tp36', $$SELECT run_status FROM kafka_lake.bridge('tp36', '2026-06-29')$$) AS t(r text);
SELECT matches(pg_temp.error_of('tp36', $$PREPARE TRANSACTION 'kl_tp36_bridge'$$),
               '^0A000: cannot PREPARE a transaction that ',
               'PREPARE TRANSACTION after bridge() is refused');
SELECT pg_temp.rollback_prepared('kl_tp36_bridge');
SELECT dblink_exec('tp36', 'ROLLBACK');
SELECT is(kl_test.sh(format('find %s/adapter -type f | wc -l', kl_test.landing('tp36'))), '0',
          'the refused transaction''s adapter files were removed when it rolled back');
SELECT is((SELECT count(*) FROM kafka_lake.adapter_versions JOIN kafka_lake.sources USING (source_id)
            WHERE source = 'tp36'), 0::bigint, 'and its catalog rows');

-- a drop that a savepoint rolled back leaves nothing pending: PREPARE works
SELECT dblink_exec('tp36', 'BEGIN');
SELECT dblink_exec('tp36', 'SAVEPOINT a');
SELECT * FROM dblink('tp36', $$SELECT kafka_lake.drop_source('tp36', drop_landing => true)::text$$) AS t(r text);
SELECT dblink_exec('tp36', 'ROLLBACK TO a');
SELECT is(pg_temp.error_of('tp36', $$PREPARE TRANSACTION 'kl_tp36_sp'$$), 'no error',
          'PREPARE after a drop in a rolled-back savepoint is allowed');
SELECT dblink_exec('tp36b', $$COMMIT PREPARED 'kl_tp36_sp'$$);
SELECT is(pg_temp.missing_dirs('tp36'), 0::bigint, 'and removes nothing');

-- land() does not depend on the end of the transaction: it can be prepared
\o /dev/null
SELECT kafka_lake.produce('tp36_kafka', 'tp36.t', kl_test.event('evt-tp36-' || n)) FROM generate_series(5, 6) n;
\o
SELECT dblink_exec('tp36', 'BEGIN');
SELECT is((SELECT sum(records) FROM dblink('tp36', $$SELECT records FROM kafka_lake.land('tp36')$$) AS t(records int)),
          2::bigint, 'a land() in a transaction to be prepared lands 2');
SELECT is(pg_temp.error_of('tp36', $$PREPARE TRANSACTION 'kl_tp36_land'$$), 'no error',
          'PREPARE after land() is allowed');
SELECT dblink_exec('tp36b', $$ROLLBACK PREPARED 'kl_tp36_land'$$);
SELECT results_eq($$SELECT status, records FROM kafka_lake.land('tp36')$$, $$VALUES ('empty', 0)$$,
                  'after ROLLBACK PREPARED the next land adopts the batch from disk (its offsets were committed)');
SELECT is((SELECT count(*) FROM kafka_lake.tp36_records), 6::bigint, 'all six records read');

SELECT dblink_disconnect('tp36');
SELECT dblink_disconnect('tp36b');
SELECT * FROM finish();
