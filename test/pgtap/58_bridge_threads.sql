-- test/pgtap/58_bridge_threads.sql: the bridge's helper jobs never outlive an ERROR or a
-- cancel.  The bridge runs three kinds of job on a helper thread (base/thread_job.c): the
-- read-ahead of the next batch's file, the CSV writer (SHA-256 and write(2) of a buffer), and
-- the read-ahead of silver's CSV.  For each, an ERROR and a cancel arrive while one is out
-- (kafka_lake.fault_injection at bridge_while_reading_ahead, bridge_while_writing_csv,
-- silver_while_reading_ahead, and their cancel_ forms): the call fails with XX000 or 57014,
-- the backend is back to one thread, no file of the bridge is left, nothing is published; then
-- the date bridges as if nothing had happened.  Needs the broker.
SELECT plan(9);

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test58.threads.' :tok
\set source 't58_threads_' :tok
SELECT kl_test.broker(format('create %s 2', :'topic')) \g /dev/null
SELECT kl_test.server('t58_kafka') \g /dev/null
SELECT kafka_lake.create_source(:'source', 't58_kafka', :'topic') \g /dev/null
SELECT set_config('t58.source', :'source', false) \g /dev/null

SELECT kl_test.fill(:'topic', 30000, 2, 1, '--date 2026-08-04 --timestamp event') \g /dev/null
SET kafka_lake.batch_max_records = 5000;
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source', timeout => '60 s')), 30000,
          '30,000 events of 2026-08-04 land in batches of 5,000: the bridge reads several files, writes megabytes');
RESET kafka_lake.batch_max_records;
-- land()'s Kafka handle may still be going away on librdkafka's own threads (a destroy left
-- to the background when the broker is slow to answer): the bridge's are what is counted
DO $$ BEGIN
    FOR i IN 1..300 LOOP EXIT WHEN kl_test.threads() = 1; PERFORM pg_sleep(0.1); END LOOP;
END $$;

-- every file under the source's adapter/ (none when the directory does not exist)
CREATE FUNCTION pg_temp.adapter_files() RETURNS int
LANGUAGE sql AS $$
    WITH RECURSIVE walk(path) AS (
        SELECT kl_test.landing(current_setting('t58.source')) || '/adapter'
        UNION ALL
        SELECT w.path || '/' || f
        FROM walk w,
             pg_ls_dir(CASE WHEN (pg_stat_file(w.path, true)).isdir THEN w.path END, true, false) f
    )
    SELECT count(*)::int FROM walk WHERE path <> kl_test.landing(current_setting('t58.source')) || '/adapter'
$$;

-- bridge with a fault point set: its SQLSTATE, then the threads and files left
CREATE FUNCTION pg_temp.bridge_with(point text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    state text := 'no error';
BEGIN
    PERFORM set_config('kafka_lake.fault_injection', point, false);
    BEGIN
        PERFORM * FROM kafka_lake.bridge(current_setting('t58.source'), '2026-08-04');
    EXCEPTION
        WHEN query_canceled THEN state := SQLSTATE;
        WHEN OTHERS THEN state := SQLSTATE;
    END;
    PERFORM set_config('kafka_lake.fault_injection', '', false);
    RETURN format('%s, %s thread(s), %s file(s)', state, kl_test.threads(), pg_temp.adapter_files());
END $$;

SELECT is(pg_temp.bridge_with('bridge_while_reading_ahead'), 'XX000, 1 thread(s), 0 file(s)',
          'an ERROR while the next batch is read ahead: one thread left, no file');
SELECT is(pg_temp.bridge_with('cancel_bridge_while_reading_ahead'), '57014, 1 thread(s), 0 file(s)',
          'a cancel then');
SELECT is(pg_temp.bridge_with('bridge_while_writing_csv'), 'XX000, 1 thread(s), 0 file(s)',
          'an ERROR while a buffer of the CSV is hashed and written');
SELECT is(pg_temp.bridge_with('cancel_bridge_while_writing_csv'), '57014, 1 thread(s), 0 file(s)',
          'a cancel then');
SELECT is(pg_temp.bridge_with('silver_while_reading_ahead'), 'XX000, 1 thread(s), 0 file(s)',
          'an ERROR while silver''s next block of the CSV is read ahead');
SELECT is(pg_temp.bridge_with('cancel_silver_while_reading_ahead'), '57014, 1 thread(s), 0 file(s)',
          'a cancel then');
SELECT is((SELECT count(*)::int FROM kafka_lake.snapshots s JOIN kafka_lake.sources src USING (source_id)
            WHERE src.source = :'source'), 0, 'nothing was published');
SELECT results_eq(format($$SELECT run_status, quality_passed, silver_rows, snapshot_status
                           FROM kafka_lake.bridge(%L, '2026-08-04')$$, :'source'),
                  $$VALUES ('processed', 8, 30000, 'published')$$,
                  'then the date bridges as if nothing had happened');

SELECT * FROM finish();
SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t58_kafka CASCADE;
