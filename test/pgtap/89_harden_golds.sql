-- test/pgtap/89_harden_golds.sql: what a new user meets of golds is true.  A SQL gold that
-- returns several rows for one grain value is refused at bridge() with the gold, the value
-- and what to do (21000), before anything is published: as the raw unique violation of the
-- gold's key was when every grain field is required, and instead of publishing the rows twice
-- when one is not.  A nested field as a grain gets a hint that leads somewhere: its example, a
-- SQL gold with a jsonb breakdown, is defined and published.  gold_as_of() and
-- <gold>_as_of() of a snapshot of another source are refused (22023) and name the functions
-- that read it, instead of answering no rows.  Needs the broker.
SELECT plan(14);

\o /dev/null
SELECT kl_test.server('g89_srv');
SELECT kl_test.broker('create g89.t 1');
SELECT kafka_lake.create_contract('sales89', $${
  "type": "object",
  "properties": {
    "sale_id":  {"type": "string"},
    "day":      {"type": "string", "format": "date"},
    "region":   {"type": "string"},
    "channel":  {"type": ["string", "null"]},
    "amount":   {"type": "integer", "minimum": 0},
    "customer": {"type": "object", "properties": {"country": {"type": "string"}}}
  },
  "required": ["sale_id", "day", "region", "amount", "customer"],
  "event_id": "sale_id",
  "business_date": {"field": "day"}
}$$);
SELECT kafka_lake.create_source('g89', 'g89_srv', 'g89.t', contract => 'sales89');
SELECT kafka_lake.create_source('g89_nokey', 'g89_srv', 'g89.t', contract => 'sales89', group_id => 'g89-nokey');
SELECT kafka_lake.create_source('g89_ok', 'g89_srv', 'g89.t', contract => 'sales89', group_id => 'g89-ok');
SELECT kafka_lake.produce('g89_srv', 'g89.t', convert_to(v, 'UTF8'))
  FROM (VALUES ('{"sale_id": "s-1", "day": "2026-07-06", "region": "north", "channel": "web", "amount": 10, "customer": {"country": "DE"}}'),
               ('{"sale_id": "s-2", "day": "2026-07-06", "region": "north", "channel": "shop", "amount": 20, "customer": {"country": "FR"}}'),
               ('{"sale_id": "s-3", "day": "2026-07-06", "region": "south", "channel": "web", "amount": 30, "customer": {"country": "DE"}}')) t(v);
SELECT kafka_lake.land('g89');
SELECT kafka_lake.land('g89_nokey');
SELECT kafka_lake.land('g89_ok');
\o

-- 15. several rows for one grain value
SELECT lives_ok($$SELECT kafka_lake.define_gold('g89', 'g89_by_region', grain => ARRAY['region'],
    sql => 'SELECT region, channel, sum(amount) AS amount FROM silver GROUP BY region, channel')$$,
                'a SQL gold that groups by more than its grain is defined (its rows are not known yet)');
SELECT throws_matching($$SELECT * FROM kafka_lake.bridge('g89', '2026-07-06')$$,
                       'the SQL of gold "g89_by_region" returns 2 rows for one grain value \(north\) of region',
                       'bridge() refuses it, naming the gold and the grain value');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('g89', '2026-07-06')$$, '21000', NULL, 'as a cardinality violation');
SELECT is((SELECT count(*)::int FROM kafka_lake.snapshots s JOIN kafka_lake.sources src USING (source_id)
            WHERE src.source = 'g89'), 0, 'and publishes nothing');
SELECT lives_ok($$SELECT kafka_lake.define_gold('g89_nokey', 'g89_by_channel', grain => ARRAY['channel'],
    sql => 'SELECT channel, region, count(*) AS n FROM silver GROUP BY channel, region')$$,
                'a gold whose grain field may be null has no primary key');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('g89_nokey', '2026-07-06')$$, '21000', NULL,
                 'its duplicate rows are refused all the same, rather than published twice');
SELECT is((SELECT count(*)::int FROM kafka_lake.g89_by_channel), 0, 'no row of it was written');

-- 16. a nested grain, and the hint's way
SELECT throws_matching($$SELECT kafka_lake.define_gold('g89_ok', 'g89_by_customer', grain => ARRAY['customer'],
    metrics => '{"amount": {"sum": "amount"}}')$$,
                       'is not a scalar', 'an object field is no grain');
CREATE FUNCTION pg_temp.hint_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
  EXECUTE q;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
  RETURN h;
END $$;
SELECT matches(pg_temp.hint_of($$SELECT kafka_lake.define_gold('g89_ok', 'g89_by_customer', grain => ARRAY['customer'],
    metrics => '{"amount": {"sum": "amount"}}')$$), 'jsonb_object_agg',
               'its hint gives a SQL gold with a jsonb breakdown');
SELECT lives_ok($$SELECT kafka_lake.define_gold('g89_ok', 'g89_by_country', grain => ARRAY[]::text[],
    sql => 'SELECT jsonb_object_agg(country, revenue) AS revenue_by_country FROM (SELECT customer ->> ''country'' AS country, sum(amount) AS revenue FROM silver GROUP BY 1) t')$$,
                'the hint''s example is defined as it is written');
CREATE TEMP TABLE b89 AS SELECT * FROM kafka_lake.bridge('g89_ok', '2026-07-06');
SELECT results_eq($$SELECT revenue_by_country FROM kafka_lake.g89_by_country_current$$,
                  $$VALUES ('{"DE": 40, "FR": 20}'::jsonb)$$, 'and published');

-- 17. a snapshot of another source
SELECT throws_matching(format('SELECT * FROM kafka_lake.gold_as_of(%s)', (SELECT snapshot_id FROM b89)),
                       'does not publish gold_daily_line_metrics',
                       'gold_as_of() of a snapshot of a source that does not publish the seed''s gold is refused');
SELECT matches(pg_temp.hint_of(format('SELECT * FROM kafka_lake.gold_as_of(%s)', (SELECT snapshot_id FROM b89))),
               format('kafka_lake\.g89_by_country_as_of\(%s\)', (SELECT snapshot_id FROM b89)),
               'and its hint names the function that reads that snapshot''s gold');
\o /dev/null
SELECT kafka_lake.define_gold('g89_nokey', 'g89_totals', grain => ARRAY[]::text[], metrics => '{"n": {"count": "*"}}');
\o
SELECT throws_ok(format('SELECT * FROM kafka_lake.g89_totals_as_of(%s)', (SELECT snapshot_id FROM b89)), '22023', NULL,
                 'a gold''s own function refuses a snapshot of another source');

SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('g89', drop_landing => true);
SELECT kafka_lake.drop_source('g89_nokey', drop_landing => true);
SELECT kafka_lake.drop_source('g89_ok', drop_landing => true);
DELETE FROM kafka_lake.contracts WHERE contract = 'sales89';
DROP SERVER g89_srv CASCADE;
\o
