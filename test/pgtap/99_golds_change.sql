-- test/pgtap/99_golds_change.sql: golds and checks can change.  A gold or a check is defined
-- again under its name (a new version, kept in gold_definitions / check_definitions, from the
-- next snapshot on; a gold keeps the columns of its table, 42P17 otherwise), dropped
-- (drop_gold, drop_check: by the role that defined it, a role that may define, or a superuser;
-- 42501 for anyone else, 42704 for an unknown one, 42809 for the built-in ones, 22004 for
-- NULLs), and every snapshot says which version made it (snapshot_definitions).  A dropped
-- gold's table and <gold>_as_of() keep the rows it published.  bridge(..., recheck => true)
-- runs the current golds and checks over a date whose events did not change and publishes
-- only when the result changes; a closed date needs reopen => true for it (55000).  Needs the
-- broker.
SELECT plan(64);

\o /dev/null
SET client_min_messages = warning;
DROP ROLE IF EXISTS g99_owner;
DROP ROLE IF EXISTS g99_plain;
CREATE ROLE g99_owner;
CREATE ROLE g99_plain;
RESET client_min_messages;
SELECT kl_test.server('g99_srv');
SELECT kl_test.broker('create g99.t 1');
SELECT kafka_lake.create_contract('sales99', $${
  "type": "object",
  "properties": {
    "sale_id": {"type": "string"},
    "day":     {"type": "string", "format": "date"},
    "region":  {"type": "string"},
    "amount":  {"type": "integer", "minimum": 0}
  },
  "required": ["sale_id", "day", "region", "amount"],
  "event_id": "sale_id",
  "natural_key": ["sale_id"],
  "business_date": {"field": "day"}
}$$);
SELECT kafka_lake.create_source('g99', 'g99_srv', 'g99.t', contract => 'sales99');
SELECT kafka_lake.produce('g99_srv', 'g99.t', convert_to(v, 'UTF8'))
  FROM (VALUES ('{"sale_id": "s-1", "day": "2026-07-06", "region": "north", "amount": 10}'),
               ('{"sale_id": "s-2", "day": "2026-07-06", "region": "north", "amount": 20}'),
               ('{"sale_id": "s-3", "day": "2026-07-06", "region": "south", "amount": 30}')) t(v);
SELECT kafka_lake.land('g99');
GRANT USAGE ON SCHEMA kafka_lake TO g99_owner, g99_plain;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text),
                          kafka_lake.add_check(text, text, text),
                          kafka_lake.drop_gold(text, text),
                          kafka_lake.drop_check(text, text) TO g99_owner, g99_plain;
GRANT SELECT, TRIGGER ON kafka_lake.g99_records TO g99_owner;
GRANT SELECT ON kafka_lake.g99_records TO g99_plain;
SELECT kafka_lake.define_gold('g99', 'g99_by_region', grain => ARRAY['region'],
  metrics => '{"amount": {"sum": "amount"}, "n": {"count": "*"}}');
SET ROLE g99_owner;
SELECT kafka_lake.define_gold('g99', 'g99_sql', grain => ARRAY[]::text[],
  sql => 'SELECT count(*) AS sales, current_user::text AS who FROM silver');
SELECT kafka_lake.add_check('g99', 'small', 'SELECT sale_id FROM silver WHERE amount > 1000');
RESET ROLE;
CREATE TEMP TABLE b1 AS SELECT * FROM kafka_lake.bridge('g99', '2026-07-06');
CREATE FUNCTION pg_temp.cur() RETURNS bigint LANGUAGE sql AS $$
  SELECT s.snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources src USING (source_id)
   WHERE src.source = 'g99' AND s.business_date = '2026-07-06' AND s.is_current $$;
CREATE FUNCTION pg_temp.defs(snap bigint) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(kind || ':' || name || ':' || version, ',' ORDER BY kind, name)
    FROM kafka_lake.snapshot_definitions WHERE snapshot_id = snap $$;
CREATE FUNCTION pg_temp.runs() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM kafka_lake.runs r JOIN kafka_lake.sources src USING (source_id) WHERE src.source = 'g99' $$;
\o

-- versions: the first definitions, and what the first snapshot says
SELECT is((SELECT snapshot_status FROM b1), 'published', 'the date is published with two golds and a check');
SELECT is(pg_temp.defs((SELECT snapshot_id FROM b1)), 'check:small:1,gold:g99_by_region:1,gold:g99_sql:1',
          'its snapshot says which version of each gold and check made it');
SELECT is((SELECT string_agg(gold || ':' || version || ':' || owner, ',' ORDER BY gold) FROM kafka_lake.gold_definitions
            WHERE NOT builtin AND gold LIKE 'g99%'), 'g99_by_region:1:postgres,g99_sql:1:g99_owner',
          'gold_definitions has version 1 of each, with its owner');

-- redefinition: same columns, a new version from the next snapshot
SELECT lives_ok($$SELECT kafka_lake.define_gold('g99', 'g99_by_region', grain => ARRAY['region'],
    metrics => '{"amount": {"max": "amount"}, "n": {"count": "*"}}')$$,
                'a gold is defined again under its name, with the same columns');
SELECT is((SELECT version FROM kafka_lake.golds WHERE gold = 'g99_by_region'), 2, 'it is version 2');
SELECT is((SELECT string_agg(version || ':' || coalesce(ended_by, 'current'), ',' ORDER BY version)
             FROM kafka_lake.gold_definitions WHERE gold = 'g99_by_region'), '1:redefined,2:current',
          'the history keeps version 1, ended by the redefinition');
SELECT throws_ok($$SELECT kafka_lake.define_gold('g99', 'g99_by_region', grain => ARRAY['region'],
    metrics => '{"total": {"sum": "amount"}}')$$, '42P17', NULL,
                 'a new definition with other columns is refused');
SELECT throws_matching($$SELECT kafka_lake.define_gold('g99', 'g99_by_region', grain => ARRAY[]::text[],
    metrics => '{"amount": {"sum": "amount"}, "n": {"count": "*"}}')$$,
                       'cannot be defined with other columns than its table',
                       'so is another grain, naming the table');
SELECT is((SELECT version FROM kafka_lake.golds WHERE gold = 'g99_by_region'), 2, 'and changes nothing');
SELECT is((SELECT snapshot_status FROM kafka_lake.bridge('g99', '2026-07-06')), 'skipped',
          'without recheck an unchanged date is skipped, whatever the definitions');
SELECT results_eq($$SELECT region, amount FROM kafka_lake.g99_by_region_current ORDER BY region$$,
                  $$VALUES ('north'::text, 30::bigint), ('south', 30)$$, 'its gold is still version 1''s');

-- recheck
SELECT is(pg_temp.runs(), 1::bigint, 'one run so far');
CREATE TEMP TABLE b2 AS SELECT * FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true);
SELECT is((SELECT run_status || ' ' || snapshot_status FROM b2), 'processed published',
          'recheck runs the new version and publishes, since its rows differ');
SELECT results_eq($$SELECT region, amount FROM kafka_lake.g99_by_region_current ORDER BY region$$,
                  $$VALUES ('north'::text, 20::bigint), ('south', 30)$$, 'the current gold is version 2''s');
SELECT results_eq(format('SELECT region, amount FROM kafka_lake.g99_by_region_as_of(%s) ORDER BY region', (SELECT snapshot_id FROM b1)),
                  $$VALUES ('north'::text, 30::bigint), ('south', 30)$$, 'the earlier snapshot keeps the rows version 1 made');
SELECT is(pg_temp.defs((SELECT snapshot_id FROM b1)), 'check:small:1,gold:g99_by_region:1,gold:g99_sql:1',
          'and says version 1 made them');
SELECT is(pg_temp.defs((SELECT snapshot_id FROM b2)), 'check:small:1,gold:g99_by_region:2,gold:g99_sql:1',
          'the new snapshot says version 2');
SELECT is((SELECT replaces_snapshot_id FROM kafka_lake.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM b2)),
          (SELECT snapshot_id FROM b1), 'and replaces the earlier one');
CREATE TEMP TABLE b3 AS SELECT * FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true);
SELECT is((SELECT run_status || ' ' || snapshot_status || ' ' || snapshot_id FROM b3),
          'skipped skipped ' || (SELECT snapshot_id FROM b2), 'a recheck that changes nothing is skipped');
SELECT is((SELECT run_id FROM b3), (SELECT run_id FROM b2), 'and reports the run that made the current snapshot');
SELECT is(pg_temp.runs(), 2::bigint, 'and leaves no run behind');
SELECT is((SELECT count(*) FROM kafka_lake.g99_silver WHERE run_id NOT IN (SELECT run_id FROM kafka_lake.runs)), 0::bigint,
          'nor silver rows');

-- a check added later
\o /dev/null
SET ROLE g99_owner;
SELECT kafka_lake.add_check('g99', 'no_north', 'SELECT sale_id FROM silver WHERE region = ''north''');
RESET ROLE;
\o
CREATE TEMP TABLE b4 AS SELECT * FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true);
SELECT is((SELECT run_status || ' ' || snapshot_status FROM b4), 'failed_quality not_published',
          'a check added later runs on a recheck, and its failure publishes nothing');
SELECT is(pg_temp.cur(), (SELECT snapshot_id FROM b2), 'the date''s snapshot stays current');
SELECT is((SELECT passed FROM kafka_lake.quality_results WHERE run_id = (SELECT run_id FROM b4) AND check_name = 'no_north'),
          false, 'the run says which check failed');

-- drop_check
SELECT throws_ok($$SELECT kafka_lake.drop_check('g99', NULL)$$, '22004', NULL, 'drop_check: a NULL check is refused');
SELECT throws_ok($$SELECT kafka_lake.drop_check(NULL, 'no_north')$$, '22004', NULL, 'and a NULL source');
SELECT throws_ok($$SELECT kafka_lake.drop_check('g99', 'no_such')$$, '42704', NULL, 'an unknown check is refused');
SELECT throws_ok($$SELECT kafka_lake.drop_check('g99', 'schema_drift')$$, '42809', NULL, 'one of the bridge''s own is refused');
SET ROLE g99_plain;
SELECT throws_ok($$SELECT kafka_lake.drop_check('g99', 'no_north')$$, '42501', NULL,
                 'a role that neither defined it nor may define is refused');
SELECT throws_ok($$SELECT kafka_lake.define_gold('g99', 'g99_by_region', grain => ARRAY['region'],
    metrics => '{"amount": {"sum": "amount"}, "n": {"count": "*"}}')$$, '42501', NULL,
                 'and may not define a gold again either');
RESET ROLE;
REVOKE TRIGGER ON kafka_lake.g99_records FROM g99_owner;
SET ROLE g99_owner;
SELECT lives_ok($$SELECT kafka_lake.drop_check('g99', 'no_north')$$,
                'the role that defined a check drops it, even without TRIGGER now');
RESET ROLE;
GRANT TRIGGER ON kafka_lake.g99_records TO g99_owner;
SELECT is((SELECT count(*) FROM pg_proc WHERE proname = 'g99_check_no_north'), 0::bigint, 'its function is gone');
SELECT is((SELECT string_agg(version || ':' || coalesce(ended_by, 'current'), ',') FROM kafka_lake.check_definitions
            WHERE check_name = 'no_north'), '1:dropped', 'its history says dropped');
SELECT is((SELECT snapshot_status FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true)), 'skipped',
          'with it gone, a recheck gives the current snapshot''s result again: skipped');
\o /dev/null
SET ROLE g99_owner;
SELECT kafka_lake.add_check('g99', 'positive', 'SELECT sale_id FROM silver WHERE amount <= 0');
RESET ROLE;
\o
CREATE TEMP TABLE b5 AS SELECT * FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true);
SELECT is((SELECT snapshot_status || ' ' || quality_passed || '/' || quality_total FROM b5),
          'published ' || (SELECT quality_total + 1 FROM b2) || '/' || (SELECT quality_total + 1 FROM b2),
          'a passing check added later changes the outcomes: a new snapshot');
SELECT is(pg_temp.defs((SELECT snapshot_id FROM b5)),
          'check:positive:1,check:small:1,gold:g99_by_region:2,gold:g99_sql:1', 'which names it');
\o /dev/null
SET ROLE g99_owner;
SELECT kafka_lake.add_check('g99', 'positive', 'SELECT sale_id FROM silver WHERE amount < 0');
RESET ROLE;
\o
SELECT is((SELECT version FROM kafka_lake.quality_checks WHERE check_name = 'positive'), 2, 'a check defined again is version 2');
SELECT is((SELECT snapshot_status FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true)), 'skipped',
          'with the same outcome a recheck is skipped');
SELECT is(pg_temp.defs(pg_temp.cur()), 'check:positive:1,check:small:1,gold:g99_by_region:2,gold:g99_sql:1',
          'and the current snapshot still says version 1 of the check made it');

-- drop_gold
SELECT throws_ok($$SELECT kafka_lake.drop_gold('g99', NULL)$$, '22004', NULL, 'drop_gold: a NULL gold is refused');
SELECT throws_ok($$SELECT kafka_lake.drop_gold(NULL, 'g99_sql')$$, '22004', NULL, 'and a NULL source');
SELECT throws_ok($$SELECT kafka_lake.drop_gold('g99', 'no_such')$$, '42704', NULL, 'an unknown gold is refused');
SELECT throws_ok($$SELECT kafka_lake.drop_gold('g99', 'gold_daily_line_metrics')$$, '42809', NULL,
                 'the built-in gold is refused');
SET ROLE g99_plain;
SELECT throws_ok($$SELECT kafka_lake.drop_gold('g99', 'g99_sql')$$, '42501', NULL,
                 'a role that neither defined it nor may define is refused');
RESET ROLE;
SELECT lives_ok($$SELECT kafka_lake.drop_gold('g99', 'g99_sql')$$, 'a superuser drops another role''s gold');
SELECT is((SELECT count(*) FROM pg_proc WHERE proname = 'g99_sql_compute') +
          (SELECT count(*) FROM pg_class WHERE relname = 'g99_sql_current'), 0::bigint,
          'its compute function and its view are gone');
SELECT is((SELECT count(*) FROM kafka_lake.golds WHERE gold = 'g99_sql'), 0::bigint, 'and its definition');
SELECT results_eq(format('SELECT sales, who FROM kafka_lake.g99_sql_as_of(%s)', (SELECT snapshot_id FROM b1)),
                  $$VALUES (3::bigint, 'g99_owner'::text)$$,
                  'its table and as-of function keep the rows of the snapshots it published');
SELECT throws_ok($$SELECT kafka_lake.drop_gold('g99', 'g99_sql')$$, '42704', NULL, 'a dropped gold is unknown');
CREATE TEMP TABLE b6 AS SELECT * FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true);
SELECT is((SELECT snapshot_status FROM b6), 'published', 'a recheck publishes the date without it');
SELECT is((SELECT count(*) FROM kafka_lake.g99_sql WHERE snapshot_id = (SELECT snapshot_id FROM b6)), 0::bigint,
          'the new snapshot has no row of the dropped gold');
SELECT is(pg_temp.defs((SELECT snapshot_id FROM b6)), 'check:positive:2,check:small:1,gold:g99_by_region:2',
          'and does not name it');
SELECT matches((SELECT kafka_lake.snapshot_gold_functions((SELECT snapshot_id FROM b1))), 'g99_sql_as_of',
               'the functions that read an earlier snapshot still name the dropped gold''s');

-- a dropped gold defined again
SELECT throws_ok($$SELECT kafka_lake.define_gold('g99', 'g99_sql', grain => ARRAY['region'],
    sql => 'SELECT region, count(*) AS sales FROM silver GROUP BY region')$$, '42P17', NULL,
                 'a dropped gold defined again with other columns is refused: its table keeps the old rows');
SET ROLE g99_owner;
SELECT lives_ok($$SELECT kafka_lake.define_gold('g99', 'g99_sql', grain => ARRAY[]::text[],
    sql => 'SELECT count(*) + 0 AS sales, session_user::text AS who FROM silver')$$,
                'with the same columns it takes its table back');
RESET ROLE;
SELECT is((SELECT version FROM kafka_lake.golds WHERE gold = 'g99_sql'), 2, 'as version 2');
SELECT is((SELECT string_agg(version || ':' || coalesce(ended_by, 'current'), ',' ORDER BY version)
             FROM kafka_lake.gold_definitions WHERE gold = 'g99_sql'), '1:dropped,2:current', 'after the dropped one');

-- a closed date
\o /dev/null
SELECT * FROM kafka_lake.close_date('g99', '2026-07-06');
SELECT kafka_lake.define_gold('g99', 'g99_by_region', grain => ARRAY['region'],
  metrics => '{"amount": {"sum": "amount"}, "n": {"count": "*"}}');
\o
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('g99', '2026-07-06', recheck => true)$$, '55000', NULL,
                 'a recheck that changes a closed date is refused without reopen');
SELECT is((SELECT closing_status FROM kafka_lake.snapshots WHERE snapshot_id = pg_temp.cur()), 'closed',
          'and the date stays closed');
CREATE TEMP TABLE b7 AS SELECT * FROM kafka_lake.bridge('g99', '2026-07-06', reopen => true, recheck => true);
SELECT is((SELECT snapshot_status || ' ' || s.closing_status FROM b7 JOIN kafka_lake.snapshots s USING (snapshot_id)),
          'published reopened', 'with reopen => true it publishes a correction');
SELECT results_eq($$SELECT region, amount, closing_status FROM kafka_lake.g99_by_region_current ORDER BY region$$,
                  $$VALUES ('north'::text, 30::bigint, 'reopened'::text), ('south', 30, 'reopened')$$,
                  'of version 3');
SELECT is((SELECT status FROM kafka_lake.date_closings d JOIN kafka_lake.sources src USING (source_id)
            WHERE src.source = 'g99' AND d.business_date = '2026-07-06'), 'reopened', 'and the certificate says reopened');

\o /dev/null
SELECT kafka_lake.drop_source('g99', drop_landing => true);
\o
SELECT is((SELECT count(*) FROM pg_class WHERE relname LIKE 'g99%' AND relnamespace = 'kafka_lake'::regnamespace), 0::bigint,
          'drop_source drops every gold table, those of dropped golds too');

SELECT * FROM finish();
\o /dev/null
DELETE FROM kafka_lake.contracts WHERE contract = 'sales99';
DROP SERVER g99_srv CASCADE;
DROP OWNED BY g99_owner, g99_plain;
DROP ROLE g99_owner;
DROP ROLE g99_plain;
\o
