-- test/pgtap/57_bridge_large_csv.sql -- a CSV of several megabytes, written
-- and hashed by the bridge's writing thread one buffer at a time while the
-- backend fills the next: source_hash is the SHA-256 of the file's bytes,
-- and an ERROR while a buffer is out leaves no thread and no file behind.
--
-- Needs a running test broker: KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR.
-- Self-contained, not wrapped in a transaction.  Edits a landed file (and
-- puts it back) with lo_export, so it runs as a superuser.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test57.large.' :tok
\set source 't57_large_' :tok
SELECT kl_test.broker(format('create %s 2', :'topic')) \g /dev/null

DROP SERVER IF EXISTS t57_kafka CASCADE;
CREATE SERVER t57_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't57_kafka', :'topic') \g /dev/null
-- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.set_compression(:'source', 'none') \g /dev/null
SELECT set_config('t57.source', :'source', false) \g /dev/null

SELECT plan(13);

SELECT kl_test.fill(:'topic', 30000, 2, 1, '--date 2026-08-03 --timestamp event') \g /dev/null
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source', max_records => 40000, timeout => '60 s')),
          30000, 'landed 30,000 events of 2026-08-03 over two partitions');

CREATE FUNCTION pg_temp.source_path(rel text) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%' THEN ''
                ELSE current_setting('data_directory') || '/' END
           || current_setting('kafka_lake.landing_dir') || '/' || current_setting('t57.source')
           || rel
$$;

-- every file under adapter/ (none when the directory does not exist)
CREATE FUNCTION pg_temp.adapter_files() RETURNS int
LANGUAGE sql AS $$
    WITH RECURSIVE walk(path) AS (
        SELECT pg_temp.source_path('/adapter')
        UNION ALL
        SELECT w.path || '/' || f
        FROM walk w,
             pg_ls_dir(CASE WHEN (pg_stat_file(w.path, true)).isdir THEN w.path END, true, false) f
    )
    SELECT count(*)::int FROM walk WHERE path <> pg_temp.source_path('/adapter')
$$;

-- the threads of this backend, counted by the kernel
CREATE FUNCTION pg_temp.threads() RETURNS int
LANGUAGE sql AS $$
    SELECT count(*)::int FROM pg_ls_dir('/proc/' || pg_backend_pid() || '/task')
$$;

-- rewrite a server file's bytes in place
CREATE FUNCTION pg_temp.write_file(path text, content bytea) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    lo oid := lo_from_bytea(0, content);
BEGIN
    PERFORM lo_export(lo, path);
    PERFORM lo_unlink(lo);
END
$$;

SELECT is(pg_temp.threads(), 1, 'the backend runs one thread before the bridge');

-- an edited batch of the last partition: XX001 after the first partition's
-- events went out to the writing thread (megabytes of CSV)
SELECT pg_temp.source_path(format('/topic=%s/partition=%s/batch=%s/accepted.jsonl',
                                  b.topic, b.partition, b.batch_id)) AS accepted_path,
       (SELECT sum(accepted_count) FROM kafka_lake.batches e
         WHERE e.source_id = b.source_id AND e.partition < b.partition) AS before_events
FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
WHERE s.source = :'source' AND b.accepted_count > 0
ORDER BY b.partition DESC, b.first_offset DESC LIMIT 1 \gset
SELECT cmp_ok(:'before_events'::bigint, '>=', 10000::bigint,
              'the edited batch comes after at least 10,000 events (over 2 MB of CSV)');
CREATE TEMP TABLE original AS SELECT pg_read_binary_file(:'accepted_path') AS content;
SELECT pg_temp.write_file(:'accepted_path',
    convert_to(regexp_replace(convert_from(content, 'UTF8'), '"units_produced": 1', '"units_produced": 2'), 'UTF8'))
FROM original \g /dev/null
SELECT isnt(pg_read_binary_file(:'accepted_path'), (SELECT content FROM original),
            'one digit of the last batch changed');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-08-03')$$, :'source'), 'XX001', NULL,
                 'the edited batch is an ERROR (XX001) in the middle of the CSV');
SELECT is(pg_temp.threads(), 1, 'and the writing thread was joined: one thread left');
SELECT is(pg_temp.adapter_files(), 0, 'no adapter file left behind (the temporary CSV is gone too)');
SELECT is((SELECT count(*)::int FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
           WHERE s.source = :'source'), 0, 'nothing recorded');

-- put the file back: the CSV is complete and source_hash is its SHA-256
SELECT pg_temp.write_file(:'accepted_path', content) FROM original \g /dev/null
SELECT is(run_status, 'processed', 'with the file restored, the bridge runs')
FROM kafka_lake.bridge(:'source', '2026-08-03');
SELECT is(pg_temp.threads(), 1, 'and leaves one thread');
SELECT (CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%' THEN ''
             ELSE current_setting('data_directory') || '/' END)
       || current_setting('kafka_lake.landing_dir') || '/' || a.path AS csv_path,
       a.source_hash
FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
WHERE s.source = :'source' \gset
SELECT cmp_ok((pg_stat_file(:'csv_path')).size, '>', 6000000::bigint,
              'the CSV has more than 6 MB (several buffers of the writing thread)');
SELECT is(encode(sha256(pg_read_binary_file(:'csv_path')), 'hex'), :'source_hash',
          'source_hash is the SHA-256 of the file''s bytes');
SELECT is((SELECT count(*)::int FROM pg_read_file(:'csv_path') AS t(c),
                  regexp_split_to_table(rtrim(c, E'\n'), E'\n') AS l),
          30001, 'the file has the header and one line per event, in full');

SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t57_kafka CASCADE;
SELECT * FROM finish();
