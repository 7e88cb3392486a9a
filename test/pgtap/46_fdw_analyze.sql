-- test/pgtap/46_fdw_analyze.sql: ANALYZE on a kafka_lake foreign table.
-- It counts every row and samples them into pg_stats; the
-- planner then uses those statistics for clauses that do not prune, while
-- the row count keeps coming from the catalog.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(12);

CREATE FUNCTION pg_temp.plan_rows(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE j jsonb;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
  RETURN (jsonb_path_query_first(j, 'strict $.**? (@."Node Type" == "Foreign Scan")')->>'Plan Rows')::bigint;
END $$;
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; ctx text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, ctx = PG_EXCEPTION_CONTEXT;
  RETURN st || E'\n' || msg || E'\nCONTEXT: ' || coalesce(ctx, '');
END $$;

\o /dev/null
SELECT kl_test.server('fdw46_kafka');
SELECT kl_test.broker('create fdw46.events 4');
SELECT kafka_lake.create_source('fdw46', 'fdw46_kafka', 'fdw46.events');
SELECT kafka_lake.set_compression('fdw46', 'none');  -- plain JSONL: the test reads the files' bytes
SELECT kl_test.fill('fdw46.events', 6000, 4, 1, '--bad-every 10');
SET kafka_lake.batch_max_records = 1000;
SELECT * FROM kafka_lake.land('fdw46');
\o
CREATE FOREIGN TABLE fdw46_typed (units_produced int, line_id text, operation text, event_time timestamptz)
  SERVER fdw46_kafka OPTIONS (source 'fdw46', status 'accepted');

SELECT is((SELECT count(*)::int FROM pg_stats WHERE schemaname = 'kafka_lake' AND tablename = 'fdw46_records'),
          0, 'no statistics before ANALYZE');
SET default_statistics_target = 10;   -- a sample of 3000 rows out of 6000
ANALYZE kafka_lake.fdw46_records;
ANALYZE fdw46_typed;
RESET default_statistics_target;

SELECT is((SELECT count(*)::int FROM pg_stats WHERE schemaname = 'kafka_lake' AND tablename = 'fdw46_records'),
          16, 'ANALYZE fills pg_stats for every column');
SELECT is((SELECT reltuples::int FROM pg_class WHERE oid = 'kafka_lake.fdw46_records'::regclass),
          6000, 'reltuples counts every row');
SELECT is((SELECT reltuples::int FROM pg_class WHERE oid = 'fdw46_typed'::regclass),
          5400, 'reltuples of a status table counts that status');
SELECT is((SELECT n_distinct FROM pg_stats WHERE schemaname = 'kafka_lake' AND tablename = 'fdw46_records'
                                            AND attname = 'partition'),
          4::real, 'partition: 4 distinct values');
SELECT ok((SELECT null_frac BETWEEN 0.85 AND 0.95 FROM pg_stats
            WHERE schemaname = 'kafka_lake' AND tablename = 'fdw46_records' AND attname = 'raw_value'),
          'raw_value: null for the 90% of records that are not quarantined');
SELECT ok((SELECT most_common_vals::text::text[] @> '{accepted,quarantined}' FROM pg_stats
            WHERE schemaname = 'kafka_lake' AND tablename = 'fdw46_records' AND attname = 'status'),
          'status: accepted and quarantined are the common values');
SELECT ok((SELECT histogram_bounds IS NOT NULL AND n_distinct > 50 FROM pg_stats
            WHERE tablename = 'fdw46_typed' AND attname = 'units_produced'),
          'units_produced: a histogram of its values');
SELECT ok((SELECT n_distinct = 4 FROM pg_stats WHERE tablename = 'fdw46_typed' AND attname = 'line_id'),
          'line_id: 4 distinct values');

-- estimates: the count from the catalog, selectivity from the statistics
SELECT is(pg_temp.plan_rows('SELECT * FROM fdw46_typed'), 5400::bigint,
          'the whole table''s estimate is still the landed count');
SELECT ok((SELECT pg_temp.plan_rows('SELECT * FROM fdw46_typed WHERE line_id = ''line-01''')
                  BETWEEN 0.7 * n AND 1.3 * n
             FROM (SELECT count(*) AS n FROM fdw46_typed WHERE line_id = 'line-01') c),
          'a clause that does not prune is estimated from pg_stats');

-- ANALYZE of a table that cannot read its values says where
CREATE FOREIGN TABLE fdw46_wrong (operation int)
  SERVER fdw46_kafka OPTIONS (source 'fdw46', status 'accepted');
SELECT matches(pg_temp.error_of('ANALYZE fdw46_wrong'),
               '^22P02\ninvalid input syntax for type integer: "[a-z]+"\nCONTEXT: kafka_lake source "fdw46", batch \d{20}-\d{20}-[0-9a-f]{12}, file accepted.jsonl, line \d+, column operation',
               'ANALYZE of a wrongly typed column: the error names batch, file, line and column');

SELECT * FROM finish();
