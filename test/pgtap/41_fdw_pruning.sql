-- test/pgtap/41_fdw_pruning.sql: clauses on topic, partition, "offset",
-- status, business_date and batch_id prune batches and files before they
-- are opened, and never change a result.  For each, EXPLAIN shows
-- fewer batches read than exist, and the rows equal those of an unpruned
-- scan (the same filter over a copy of the whole table).  Row estimates
-- come from the catalog's counts.  Needs the broker.
SET client_min_messages = warning;
SELECT plan(88);

-- "Batches Read" etc. of the (first) foreign scan of a query
CREATE FUNCTION pg_temp.scan(q text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE j jsonb;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
  RETURN jsonb_path_query_first(j, 'strict $.**? (@."Node Type" == "Foreign Scan")');
END $$;
CREATE FUNCTION pg_temp.batches_read(q text) RETURNS int LANGUAGE sql AS $$
  SELECT (pg_temp.scan(q)->>'Batches Read')::int $$;
CREATE FUNCTION pg_temp.plan_rows(q text) RETURNS bigint LANGUAGE sql AS $$
  SELECT (pg_temp.scan(q)->>'Plan Rows')::bigint $$;

-- 4 partitions x 3 business dates, batches of 5; duplicates and quarantined
-- records in some batches
\o /dev/null
SELECT kl_test.server('fdw41_kafka');
SELECT kl_test.broker('create fdw41.events 4');
SELECT kafka_lake.create_source('fdw41', 'fdw41_kafka', 'fdw41.events');
SELECT kl_test.fill('fdw41.events', 40, 4, 1, '--date 2026-06-28');
SELECT kl_test.fill('fdw41.events', 40, 4, 1, '--date 2026-06-29');
SELECT kl_test.fill('fdw41.events', 36, 4, 1, '--date 2026-06-30 --bad-every 9');
SELECT kafka_lake.produce('fdw41_kafka', 'fdw41.events',
                          kl_test.event('evt-20260629-00000' || i, business_date => '2026-06-29'),
                          partition => 2)
  FROM generate_series(1, 4) i;
SET kafka_lake.batch_max_records = 5;
SELECT * FROM kafka_lake.land('fdw41');
\o

SELECT count(*) AS total_batches FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'fdw41' \gset
SELECT cmp_ok(:total_batches, '>=', 24, 'many batches over 4 partitions and 3 dates');
SELECT ok((SELECT count(DISTINCT min_business_date) = 3 AND count(*) FILTER (WHERE min_business_date < max_business_date) = 1
             FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'fdw41' AND min_business_date IS NOT NULL),
          'batches of three business dates, one of them holding two');
SELECT ok((SELECT sum(duplicate_count) = 4 AND sum(quarantine_count) = 4
             FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = 'fdw41'),
          'some batches hold duplicates, some quarantined records');

-- the unpruned scan, for comparison
CREATE TEMP TABLE fdw41_all AS SELECT * FROM kafka_lake.fdw41_records;
SELECT is((SELECT count(*)::int FROM fdw41_all), 120, 'an unpruned scan reads all 120 records');
SELECT is(pg_temp.batches_read('SELECT * FROM kafka_lake.fdw41_records'), :total_batches,
          'without clauses every batch is read');

-- batch ids to prune by
SELECT batch_id AS b1 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'fdw41' AND partition = 1 ORDER BY first_offset OFFSET 2 LIMIT 1 \gset
SELECT batch_id AS b2 FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
 WHERE s.source = 'fdw41' AND partition = 3 ORDER BY first_offset LIMIT 1 \gset

-- per clause: EXPLAIN reads exactly the batches that can match, fewer than
-- exist, and the rows equal those of the unpruned scan
-- (expect: the batches that can match, as a condition on kafka_lake.batches b)
CREATE TEMP TABLE fdw41_cases (n serial, clause text, expect text);
INSERT INTO fdw41_cases (clause, expect) VALUES
  ('topic = ''no.such.topic''', 'false'),
  ('topic IN (''a'', ''b'')', 'false'),
  ('topic = ''fdw41.events'' AND "partition" = 0', 'b.partition = 0'),
  ('"partition" = 2', 'b.partition = 2'),
  ('"partition" IN (1, 3)', 'b.partition IN (1, 3)'),
  ('"partition" < 2', 'b.partition < 2'),
  ('"partition" = ANY (''{0,3,7}''::int8[])', 'b.partition IN (0, 3)'),
  ('"offset" BETWEEN 12 AND 17', 'b.last_offset >= 12 AND b.first_offset <= 17'),
  ('"offset" = 25', '25 BETWEEN b.first_offset AND b.last_offset'),
  ('"offset" IN (3, 27)', '3 BETWEEN b.first_offset AND b.last_offset OR 27 BETWEEN b.first_offset AND b.last_offset'),
  ('"offset" >= 30', 'b.last_offset >= 30'),
  ('status = ''quarantined''', 'b.quarantine_count > 0'),
  ('status = ''duplicate_event_id''', 'b.duplicate_count > 0'),
  ('status IN (''duplicate_event_id'', ''quarantined'')', 'b.duplicate_count > 0 OR b.quarantine_count > 0'),
  ('business_date = ''2026-06-29''', '''2026-06-29'' BETWEEN b.min_business_date AND b.max_business_date'),
  ('business_date > ''2026-06-29''', 'b.max_business_date > ''2026-06-29'''),
  ('business_date IN (''2026-06-28'', ''2026-06-30'')',
   '''2026-06-28'' BETWEEN b.min_business_date AND b.max_business_date OR ''2026-06-30'' BETWEEN b.min_business_date AND b.max_business_date'),
  ('business_date BETWEEN ''2026-06-29'' AND ''2026-06-29''', '''2026-06-29'' BETWEEN b.min_business_date AND b.max_business_date'),
  ('batch_id = ' || quote_literal(:'b1'), 'b.batch_id = ' || quote_literal(:'b1')),
  ('batch_id IN (' || quote_literal(:'b1') || ', ' || quote_literal(:'b2') || ')',
   'b.batch_id IN (' || quote_literal(:'b1') || ', ' || quote_literal(:'b2') || ')'),
  ('"partition" = 1 AND business_date = ''2026-06-30'' AND status = ''accepted''',
   'b.partition = 1 AND ''2026-06-30'' BETWEEN b.min_business_date AND b.max_business_date AND b.accepted_count > 0'),
  ('"partition" < 1 AND "partition" > 2', 'false'),
  ('business_date = to_date(''20260629'', ''YYYYMMDD'')', '''2026-06-29'' BETWEEN b.min_business_date AND b.max_business_date'),
  ('"offset" < 0', 'false');

CREATE FUNCTION pg_temp.expected_batches(expect text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  EXECUTE 'SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = ''fdw41'' AND (' || expect || ')' INTO n;
  RETURN n;
END $$;
SELECT is(pg_temp.batches_read('SELECT * FROM kafka_lake.fdw41_records WHERE ' || clause),
          pg_temp.expected_batches(expect),
          format('%s: EXPLAIN shows %s of %s batches read', clause, pg_temp.expected_batches(expect),
                 :total_batches))
  FROM fdw41_cases ORDER BY n;
SELECT cmp_ok(pg_temp.expected_batches(expect), '<', :total_batches, clause || ': that is fewer than exist')
  FROM fdw41_cases ORDER BY n;
SELECT bag_eq(format('SELECT "partition", "offset", status, event_id FROM kafka_lake.fdw41_records WHERE %s', clause),
              format('SELECT "partition", "offset", status, event_id FROM fdw41_all WHERE %s', clause),
              clause || ': the same rows as the unpruned scan')
  FROM fdw41_cases ORDER BY n;

-- pruning by parameters: custom and generic plans
PREPARE fdw41_p(int, date) AS
  SELECT count(*) FROM kafka_lake.fdw41_records WHERE "partition" = $1 AND business_date = $2;
SET plan_cache_mode = force_generic_plan;
SELECT is((SELECT count(*)::int FROM fdw41_all WHERE "partition" = 3 AND business_date = '2026-06-29'),
          (SELECT count(*)::int FROM kafka_lake.fdw41_records WHERE "partition" = 3 AND business_date = '2026-06-29'),
          'sanity: the same count both ways');
CREATE FUNCTION pg_temp.explain_lines(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; r text := '';
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP r := r || l || E'\n'; END LOOP;
  RETURN r;
END $$;
SELECT matches(pg_temp.explain_lines('EXECUTE fdw41_p(3, ''2026-06-29'')'),
               'Batches: 2 read, \d+ pruned',
               'a generic plan prunes by its parameters at execution');
RESET plan_cache_mode;
SELECT matches(pg_temp.explain_lines('EXECUTE fdw41_p(3, ''2026-06-29'')'),
               'Batches: 2 read, \d+ pruned', 'a custom plan prunes by its parameters');

-- files are pruned too: a status prunes the other files of the batches it reads
SELECT ok((SELECT (j->>'Files Read')::int = (SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
                                              WHERE s.source = 'fdw41' AND quarantine_count > 0)
                  AND (j->>'Files Read')::int + (j->>'Files Pruned')::int = 3 * :total_batches
             FROM pg_temp.scan('SELECT * FROM kafka_lake.fdw41_records WHERE status = ''quarantined''') j),
          'status = quarantined reads only quarantine files');
SELECT ok((SELECT j->>'Statuses' = 'accepted, duplicate_event_id'
             FROM pg_temp.scan('SELECT * FROM kafka_lake.fdw41_records WHERE business_date = ''2026-06-28''') j),
          'a business_date clause prunes the quarantine files (no date)');

-- a non-deterministic collation must not prune by bytes
CREATE COLLATION fdw41_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT is((SELECT count(*)::int FROM kafka_lake.fdw41_records WHERE status = 'QUARANTINED' COLLATE fdw41_ci),
          4, 'status = ... under a case-insensitive collation finds what bytes would not');
SELECT is(pg_temp.batches_read('SELECT * FROM kafka_lake.fdw41_records WHERE status = ''QUARANTINED'' COLLATE fdw41_ci'),
          :total_batches, 'and does not prune');

-- row estimates come from the catalog's counts
SELECT is(pg_temp.plan_rows('SELECT * FROM kafka_lake.fdw41_records'),
          (SELECT sum(record_count) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'fdw41'),
          'the whole table''s estimate is the landed count');
CREATE FOREIGN TABLE fdw41_accepted (units_produced int, "partition" int, "offset" bigint)
  SERVER fdw41_kafka OPTIONS (source 'fdw41', status 'accepted');
SELECT is(pg_temp.plan_rows('SELECT sum(units_produced) FROM fdw41_accepted'),
          (SELECT sum(accepted_count) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'fdw41'),
          'a status table''s estimate is the landed count of that status');
SELECT is(pg_temp.plan_rows('SELECT * FROM kafka_lake.fdw41_records WHERE "partition" = 2'),
          (SELECT sum(record_count) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'fdw41' AND partition = 2),
          'a partition''s estimate is its landed count');
SELECT is(pg_temp.plan_rows('SELECT * FROM fdw41_accepted WHERE "offset" BETWEEN 0 AND 2'),
          12::bigint, 'an offset range is estimated from the batches'' offset ranges');

SELECT * FROM finish();
