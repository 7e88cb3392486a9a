-- test/pgtap/53_bridge_errors.sql -- what the bridge refuses, and that a
-- refused or rolled-back call leaves nothing behind
--
-- Needs a running test broker: KL_BOOTSTRAP, KL_BROKER, KL_BROKER_DIR.
-- Self-contained, not wrapped in a transaction.  Edits a landed file (and
-- puts it back) with lo_export, so it runs as a superuser.

\getenv bootstrap KL_BOOTSTRAP
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;

SELECT to_char(clock_timestamp(), 'YYYYMMDDHH24MISSUS') AS tok \gset
\set topic 'kafka_lake.test53.errors.' :tok
\set source 't53_err_' :tok
\setenv KL_T53_TOPIC :topic
\! "$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$KL_T53_TOPIC" 1 >/dev/null

DROP SERVER IF EXISTS t53_kafka CASCADE;
CREATE SERVER t53_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers :'bootstrap');
SELECT kafka_lake.create_source(:'source', 't53_kafka', :'topic') \g /dev/null
-- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.set_compression(:'source', 'none') \g /dev/null
SELECT set_config('t53.source', :'source', false) \g /dev/null

CREATE FUNCTION pg_temp.event(n int) RETURNS bytea
LANGUAGE sql AS $$
    SELECT convert_to(json_build_object(
        'event_id', 'evt-53-' || n, 'schema_version', 1,
        'event_time', format('2026-07-20T0%s:00:00Z', n), 'business_date', '2026-07-20',
        'plant_id', 'plant-53', 'line_id', 'line-01', 'work_order_id', 'wo-53',
        'machine_id', 'm-' || n, 'product_code', 'prd-a', 'operation', 'packaging',
        'units_produced', 100 + n, 'defect_count', 0, 'cycle_time_ms', 500)::text, 'UTF8')
$$;

CREATE FUNCTION pg_temp.source_path(rel text) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%' THEN ''
                ELSE current_setting('data_directory') || '/' END
           || current_setting('kafka_lake.landing_dir') || '/' || current_setting('t53.source')
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

CREATE FUNCTION pg_temp.written(OUT adapters int, OUT runs int, OUT silver int, OUT snapshots int)
LANGUAGE sql AS $$
    SELECT (SELECT count(*)::int FROM kafka_lake.adapter_versions a WHERE a.source_id = s.source_id),
           (SELECT count(*)::int FROM kafka_lake.runs r WHERE r.source_id = s.source_id),
           (SELECT count(*)::int FROM kafka_lake.silver_machine_events m
            JOIN kafka_lake.runs r USING (run_id) WHERE r.source_id = s.source_id),
           (SELECT count(*)::int FROM kafka_lake.snapshots n WHERE n.source_id = s.source_id)
    FROM kafka_lake.sources s WHERE s.source = current_setting('t53.source')
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

SELECT plan(26);

-- arguments
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('no_such_source', '2026-07-20')$$, '42704',
                 'source "no_such_source" does not exist', 'an unknown source is an ERROR (42704)');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge(NULL, '2026-07-20')$$, '22004',
                 'source and business_date must not be null', 'a null source is an ERROR (22004)');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, NULL)$$, :'source'), '22004',
                 'source and business_date must not be null', 'a null date is an ERROR (22004)');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, 'infinity')$$, :'source'), '22023',
                 'business_date must be a finite date', 'an infinite date is an ERROR (22023)');
SELECT throws_ok($$SELECT * FROM kafka_lake.gold_as_of(-1)$$, 'P0002',
                 'snapshot -1 does not exist', 'gold_as_of of an unknown snapshot is an ERROR (P0002)');

-- no events at all, then none of that date
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-07-20')$$, :'source'), 'P0002',
                 format('source "%s" has no accepted event with business_date 2026-07-20', :'source'),
                 'a source with nothing landed: P0002');
SELECT is(array[kafka_lake.produce('t53_kafka', :'topic', pg_temp.event(1)),
                kafka_lake.produce('t53_kafka', :'topic', pg_temp.event(2))],
          '{0,1}'::bigint[], 'two events of 2026-07-20 produced');
SELECT is((SELECT sum(accepted)::int FROM kafka_lake.land(:'source')), 2, 'and landed');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-07-21')$$, :'source'), 'P0002',
                 format('source "%s" has no accepted event with business_date 2026-07-21', :'source'),
                 'a date without events: P0002');
SELECT results_eq($$SELECT * FROM pg_temp.written()$$, $$VALUES (0, 0, 0, 0)$$,
                  'nothing recorded');
SELECT is(pg_temp.adapter_files(), 0, 'no adapter file or directory written');

-- an edited accepted file: XX001 before anything is written
SELECT pg_temp.source_path(format('/topic=%s/partition=0/batch=%s/accepted.jsonl', b.topic, b.batch_id)) AS accepted_path
FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
WHERE s.source = :'source' AND b.accepted_count > 0 \gset
CREATE TEMP TABLE original AS SELECT pg_read_binary_file(:'accepted_path') AS content;
SELECT pg_temp.write_file(:'accepted_path',
    convert_to(replace(convert_from(content, 'UTF8'), '"units_produced": 101', '"units_produced": 109'), 'UTF8'))
FROM original \g /dev/null
SELECT is(length(pg_read_binary_file(:'accepted_path')), (SELECT length(content) FROM original),
          'one digit of the landed file changed, its size did not');
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-07-20')$$, :'source'), 'XX001', NULL,
                 'an edited accepted file is an ERROR (XX001)');
SELECT throws_like(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-07-20')$$, :'source'),
                   '%accepted.jsonl of batch % does not match its manifest%',
                   'the error names the file and the batch');
SELECT results_eq($$SELECT * FROM pg_temp.written()$$, $$VALUES (0, 0, 0, 0)$$,
                  'nothing recorded');
SELECT is(pg_temp.adapter_files(), 0, 'no adapter file left behind (the temporary CSV is gone too)');

-- a truncated file, a missing file
SELECT pg_temp.write_file(:'accepted_path', substring(content FROM 1 FOR 40)) FROM original \g /dev/null
SELECT throws_like(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-07-20')$$, :'source'),
                   '%accepted.jsonl of batch % has 40 bytes, its manifest says%',
                   'a truncated accepted file is refused');
SELECT pg_temp.write_file(:'accepted_path', content) FROM original \g /dev/null

-- put the file back: the bridge works, inside a transaction that rolls back
BEGIN;
SELECT results_eq(format($$SELECT run_status FROM kafka_lake.bridge(%L, '2026-07-20')$$, :'source'),
                  $$VALUES ('processed'::text)$$, 'with the file restored, the bridge runs');
SELECT ok(pg_temp.adapter_files() > 0, 'it wrote its adapter files');
ROLLBACK;
SELECT results_eq($$SELECT * FROM pg_temp.written()$$, $$VALUES (0, 0, 0, 0)$$,
                  'after ROLLBACK nothing is recorded');
SELECT is(pg_temp.adapter_files(), 0, 'and the adapter files the call created are removed');

-- inside a savepoint that rolls back
BEGIN;
SAVEPOINT before_bridge;
SELECT kafka_lake.bridge(:'source', '2026-07-20') \g /dev/null
ROLLBACK TO SAVEPOINT before_bridge;
SELECT is(pg_temp.adapter_files(), 0, 'a bridge rolled back to a savepoint leaves no file');
COMMIT;

-- committed: the files stay; a failed later call does not remove files it did not create
CREATE TEMP TABLE ok_bridge AS SELECT * FROM kafka_lake.bridge(:'source', '2026-07-20');
SELECT pg_temp.adapter_files() AS files_after \gset
SELECT results_eq($$SELECT * FROM pg_temp.written()$$, $$VALUES (1, 1, 2, 1)$$,
                  'a committed bridge: one adapter version, one run, two silver rows, one snapshot');
SET kafka_lake.fault_injection = 'bridge_before_gold';
BEGIN;
UPDATE kafka_lake.runs SET status = 'failed_quality' WHERE run_id = (SELECT run_id FROM ok_bridge);
SELECT throws_ok(format($$SELECT * FROM kafka_lake.bridge(%L, '2026-07-20')$$, :'source'), 'XX000', NULL,
                 'a later call that reuses the adapter version fails');
ROLLBACK;
RESET kafka_lake.fault_injection;
SELECT is(pg_temp.adapter_files(), :files_after,
          'the content-addressed files it found in place are still there');
SELECT results_eq(format($$SELECT adapter_status, run_status FROM kafka_lake.bridge(%L, '2026-07-20')$$, :'source'),
                  $$VALUES ('reused'::text, 'skipped'::text)$$, 'and the committed run still makes the bridge skip');

SELECT * FROM finish();

SELECT kafka_lake.drop_source(:'source', drop_landing => true) \g /dev/null
DROP SERVER t53_kafka CASCADE;
