-- test/pgtap/97_harden_gates.sql: who may gate a source's publication, which names a gold may
-- take, and who sees a source's errors.  Reading a source is not enough to add a gold or a
-- check to it (either could stop every later publication of the source for everyone): that
-- needs TRIGGER on the source's table as well, granted by its owner.  A gold may not take a
-- name that a source created later needs (x_records, x_events, x_silver), nor one of another
-- gold's or check's objects; a source whose tables would meet an existing object is refused
-- before anything is made.  source_status shows the text of a source's last error only to a
-- role that may read the source.  Needs the broker.
SELECT plan(21);

\o /dev/null
SELECT kl_test.server('gates97_srv');
SELECT kl_test.broker('create gates97.t 1');
SELECT kafka_lake.create_contract('sales97', $${
  "type": "object",
  "properties": {
    "sale_id": {"type": "string"},
    "day":     {"type": "string", "format": "date"},
    "region":  {"type": "string"},
    "amount":  {"type": "integer", "minimum": 0}
  },
  "required": ["sale_id", "day", "region", "amount"],
  "event_id": "sale_id",
  "business_date": {"field": "day"}
}$$);
SELECT kafka_lake.create_source('gates97', 'gates97_srv', 'gates97.t', contract => 'sales97');
SELECT kafka_lake.produce('gates97_srv', 'gates97.t',
         convert_to(format('{"sale_id": "s-%s", "day": "2026-07-03", "region": "north", "amount": %s}', i, i), 'UTF8'))
  FROM generate_series(1, 3) i;
SELECT kafka_lake.land('gates97');
\o

DROP ROLE IF EXISTS t97_reader;
DROP ROLE IF EXISTS t97_watcher;
CREATE ROLE t97_reader;
CREATE ROLE t97_watcher;
GRANT USAGE ON SCHEMA kafka_lake TO t97_reader, t97_watcher;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text),
                          kafka_lake.add_check(text, text, text) TO t97_reader;
GRANT SELECT ON kafka_lake.gates97_records TO t97_reader;
GRANT SELECT ON kafka_lake.source_status TO t97_reader, t97_watcher;

-- 4. reading is no veto
SET ROLE t97_reader;
SELECT throws_ok($$SELECT kafka_lake.add_check('gates97', 'always_fails', 'SELECT 1 FROM silver')$$,
                 '42501', NULL, 'a role that may only read the source may not add a check to it');
SELECT throws_ok($$SELECT kafka_lake.define_gold('gates97', 'gates97_boom', grain => ARRAY['region'],
    sql => 'SELECT region, 1/0 AS boom FROM silver GROUP BY region')$$,
                 '42501', NULL, 'nor define a gold of it');
SELECT throws_matching($$SELECT kafka_lake.define_gold('gates97', 'gates97_n', grain => ARRAY[]::text[],
    metrics => '{"n": {"count": "*"}}')$$,
                       'may not define gold', 'not even a declared one');
RESET ROLE;
SELECT results_eq($$SELECT run_status, quality_passed = quality_total FROM kafka_lake.bridge('gates97', '2026-07-03')$$,
                  $$VALUES ('processed', true)$$, 'so the source publishes, whatever its readers wish');

-- the source's owner allows it
GRANT TRIGGER ON kafka_lake.gates97_records TO t97_reader;
SET ROLE t97_reader;
SELECT lives_ok($$SELECT kafka_lake.define_gold('gates97', 'gates97_n', grain => ARRAY[]::text[],
    metrics => '{"n": {"count": "*"}}')$$, 'with TRIGGER on the source''s table a role defines a gold');
SELECT lives_ok($$SELECT kafka_lake.add_check('gates97', 'no_zero', 'SELECT sale_id FROM silver WHERE amount = 0')$$,
                'and adds a check');

-- 5. names a gold may not take
SELECT throws_ok($$SELECT kafka_lake.define_gold('gates97', 'orders_records', grain => ARRAY[]::text[],
    metrics => '{"n": {"count": "*"}}')$$, '42939', NULL, 'a gold may not take the name of a source''s foreign table');
SELECT throws_ok($$SELECT kafka_lake.define_gold('gates97', 'orders_events', grain => ARRAY[]::text[],
    metrics => '{"n": {"count": "*"}}')$$, '42939', NULL, 'nor of its typed table');
SELECT throws_ok($$SELECT kafka_lake.define_gold('gates97', 'orders_silver', grain => ARRAY[]::text[],
    metrics => '{"n": {"count": "*"}}')$$, '42939', NULL, 'nor of its silver');
SELECT throws_ok($$SELECT kafka_lake.define_gold('gates97', 'gates97_n_current', grain => ARRAY[]::text[],
    metrics => '{"n": {"count": "*"}}')$$, '42939', NULL, 'nor of another gold''s view');
SELECT throws_ok($$SELECT kafka_lake.define_gold('gates97', 'gates97_check_no', grain => ARRAY[]::text[],
    metrics => '{"n": {"count": "*"}}')$$, '42939', NULL, 'nor a name whose functions a check''s could meet');
SELECT throws_ok($$SELECT kafka_lake.add_check('gates97', 'check_zero', 'SELECT 1 FROM silver WHERE false')$$,
                 '42939', NULL, 'and a check''s name may not hold check_');
RESET ROLE;
SELECT lives_ok($$SELECT kafka_lake.create_source('orders97', 'gates97_srv', 'gates97.t', contract => 'sales97',
                                                  group_id => 'orders97')$$,
                'so a source created later gets every name it needs');
SELECT is((SELECT count(*)::int FROM pg_class WHERE relnamespace = 'kafka_lake'::regnamespace
            AND relname IN ('orders97_records', 'orders97_events', 'orders97_silver')), 3,
          'its foreign table, typed table and silver');
SELECT throws_matching($$SELECT kafka_lake.create_source('late', 'gates97_srv', 'gates97.t', contract => 'sales97',
                                                         group_id => 'late97')$$,
                       'source "late" cannot be created: kafka_lake.late_events exists',
                       'a source whose table would meet a catalog view is refused before anything is made');
SELECT throws_matching($$SELECT kafka_lake.create_source('accepted', 'gates97_srv', 'gates97.t', contract => 'sales97',
                                                         group_id => 'accepted97')$$,
                       'kafka_lake.accepted_events exists', 'and one that would meet a catalog table');
SELECT is((SELECT count(*)::int FROM kafka_lake.sources WHERE source IN ('late', 'accepted')), 0,
          'neither was recorded');

-- 6. the text of a source's last error, to its readers only
\o /dev/null
CREATE SERVER gates97_dead FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:1');
SELECT kafka_lake.create_source('gates97_dead', 'gates97_dead', 'gates97.t', contract => 'sales97',
                                group_id => 'gates97-dead');
GRANT SELECT ON kafka_lake.gates97_dead_records TO t97_reader;
DO $$
BEGIN
  PERFORM * FROM kafka_lake.land('gates97_dead', timeout => '1 s');
EXCEPTION WHEN OTHERS THEN NULL;
END $$;
\o
SELECT ok((SELECT last_error IS NOT NULL AND last_error_sqlstate IS NOT NULL FROM kafka_lake.source_status
            WHERE source = 'gates97_dead' LIMIT 1), 'a superuser sees the failed call''s error');
SET ROLE t97_reader;
SELECT ok((SELECT last_error IS NOT NULL FROM kafka_lake.source_status WHERE source = 'gates97_dead' LIMIT 1),
          'so does a role that may read the source');
SET ROLE t97_watcher;
SELECT results_eq($$SELECT last_status, last_error_sqlstate IS NOT NULL, last_error FROM kafka_lake.source_status
                     WHERE source = 'gates97_dead' LIMIT 1$$,
                  $$VALUES ('failed', true, NULL::text)$$,
                  'a role that may read the view but not the source sees that it failed and its SQLSTATE, not the text');
SELECT ok((SELECT count(*) > 0 FROM kafka_lake.source_status WHERE source = 'gates97'),
          'and the other columns of every source');
RESET ROLE;

SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('gates97', drop_landing => true);
SELECT kafka_lake.drop_source('orders97', drop_landing => true);
SELECT kafka_lake.drop_source('gates97_dead', drop_landing => true);
DELETE FROM kafka_lake.contracts WHERE contract = 'sales97';
REVOKE ALL ON SCHEMA kafka_lake FROM t97_reader, t97_watcher;
REVOKE ALL ON kafka_lake.source_status FROM t97_reader, t97_watcher;
REVOKE ALL ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text), kafka_lake.add_check(text, text, text) FROM t97_reader;
DROP SERVER gates97_srv CASCADE;
DROP SERVER gates97_dead CASCADE;
DROP ROLE t97_reader;
DROP ROLE t97_watcher;
\o
