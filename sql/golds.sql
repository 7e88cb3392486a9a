--
-- golds: what define_gold() and add_check() refuse at definition time, each
-- with its SQLSTATE and hint (an unknown field in the grain or a metric, a
-- metric over a field that is not numeric, SQL that does not return the
-- grain, a name in use, ...), NULL arguments, and who may define.  Needs no
-- broker: create_source() does not connect.
--
CREATE EXTENSION kafka_lake;

-- the SQLSTATE, message and hint of the error a statement raises
CREATE FUNCTION pg_temp.error_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  hint text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
  RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' | HINT: ' || nullif(hint, ''), ' | no hint');
END $$;

CREATE SERVER regress_g_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:9');
SELECT kafka_lake.create_contract('regress_sales', $${
  "type": "object",
  "properties": {
    "sale_id": {"type": "string"},
    "sold_at": {"type": "string", "format": "date-time"},
    "country": {"type": "string", "enum": ["de", "fr"]},
    "amount":  {"type": "number", "minimum": 0, "sql_type": "numeric(10,2)"},
    "qty":     {"type": "integer", "exclusiveMinimum": 0},
    "meta":    {"type": "object"},
    "note":    {"type": ["string", "null"]}
  },
  "required": ["sale_id", "sold_at", "country", "amount", "qty"],
  "event_id": "sale_id",
  "business_date": {"field": "sold_at", "time_zone": "UTC"},
  "natural_key": ["sale_id"],
  "rules": ["qty <= 1000"]
}$$);
SELECT kafka_lake.create_source('regress_g', 'regress_g_srv', 'regress.g', contract => 'regress_sales');
SELECT kafka_lake.create_source('regress_g_raw', 'regress_g_srv', 'regress.g.raw', contract => 'json_object',
                                group_id => 'regress-g-raw');

-- silver exists from create_source on, typed from the contract
SELECT attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute WHERE attrelid = 'kafka_lake.regress_g_silver'::regclass AND attnum > 0 ORDER BY attnum;
SELECT to_regclass('kafka_lake.regress_g_raw_silver') AS no_silver_without_business_date;

-- bad definitions
SELECT pg_temp.error_of(q)
  FROM (VALUES
    -- the grain
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['contry'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['meta'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country', 'country'], '{"n": {"count": "*"}}')$$),
    -- the metrics
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"sum": "country"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"avg": "note", "round": 2}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"sum": "amout"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"summ": "amount"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"sum": "amount", "count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"avg": "amount"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"sum": "amount", "round": 2}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"avg": "amount", "round": 20}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"avg": "amount", "round": 2, "rounding": "pyton"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"r": {"ratio": ["a", "b"], "round": 2}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"r": {"ratio": "a", "round": 2}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"a": {"avg": "qty", "round": 1}, "r": {"ratio": ["a", "a"], "round": 2}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"country": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"Bad Name": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"closing_status": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '[1]')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": 1}')$$),
    -- metrics or sql, one of them
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'])$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], '{"n": {"count": "*"}}', 'SELECT 1')$$),
    -- SQL that does not return the grain, or is not SQL
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT sum(amount) AS revenue FROM silver')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT sum(amount) AS revenue, country FROM silver GROUP BY country')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT country::varchar AS country, sum(amount) AS revenue FROM silver GROUP BY 1')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT country FROM silver GROUP BY 1')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT country, count(*) + 0 FROM silver GROUP BY 1')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT country, count(*) AS n, sum(qty) AS n FROM silver GROUP BY 1')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT country, sum(amount) AS revenue FROM silver GROUP BY')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY['country'], sql => 'SELECT country, sum(price) AS revenue FROM silver GROUP BY 1')$$),
    -- names, sources
    ($$SELECT kafka_lake.define_gold('regress_g', 'Bad-Name', ARRAY['country'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'gold_daily_line_metrics', ARRAY['country'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'sources', ARRAY['country'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_nope', 'g1', ARRAY['country'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g_raw', 'g1', ARRAY[]::text[], '{"n": {"count": "*"}}')$$),
    -- NULLs
    ($$SELECT kafka_lake.define_gold(NULL, 'g1', ARRAY['country'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', NULL, ARRAY['country'], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', NULL, '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.define_gold('regress_g', 'g1', ARRAY[NULL], '{"n": {"count": "*"}}')$$),
    ($$SELECT kafka_lake.add_check(NULL, 'c1', 'SELECT 1 FROM silver')$$),
    ($$SELECT kafka_lake.add_check('regress_g', NULL, 'SELECT 1 FROM silver')$$),
    ($$SELECT kafka_lake.add_check('regress_g', 'c1', NULL)$$),
    -- checks
    ($$SELECT kafka_lake.add_check('regress_g', 'schema_drift', 'SELECT 1 FROM silver')$$),
    ($$SELECT kafka_lake.add_check('regress_g', 'accepted_values_x', 'SELECT 1 FROM silver')$$),
    ($$SELECT kafka_lake.add_check('regress_g', 'c1', 'SELECT nope FROM silver')$$),
    ($$SELECT kafka_lake.add_check('regress_g_raw', 'c1', 'SELECT 1')$$)
  ) AS t(q);

-- a good one, then again with other columns (refused: its table keeps its columns)
SELECT kafka_lake.define_gold('regress_g', 'regress_g_daily', ARRAY['business_date', 'country'],
  '{"revenue": {"sum": "amount"}, "items": {"sum": "qty"}, "sales": {"count": "*"}, "noted": {"count": "note"},
    "avg_qty": {"avg": "qty", "round": 2, "rounding": "python"}, "items_per_sale": {"ratio": ["items", "sales"], "round": 3}}');
SELECT pg_temp.error_of($$SELECT kafka_lake.define_gold('regress_g', 'regress_g_daily', ARRAY['country'], '{"n": {"count": "*"}}')$$);
SELECT attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute WHERE attrelid = 'kafka_lake.regress_g_daily'::regclass AND attnum > 0 ORDER BY attnum;
SELECT gold, s.source, grain, metrics IS NOT NULL AS declared, sql, compute, owner = current_user AS mine, builtin
  FROM kafka_lake.golds g LEFT JOIN kafka_lake.sources s USING (source_id) ORDER BY gold;
SELECT kafka_lake.define_gold('regress_g', 'regress_g_sql', ARRAY['country'],
  sql => 'SELECT country, sum(amount) AS revenue FROM silver GROUP BY country');
SELECT kafka_lake.add_check('regress_g', 'no_free_sales', 'SELECT sale_id FROM silver WHERE amount = 0');
SELECT check_name, function, sql FROM kafka_lake.quality_checks;
SELECT p.oid::regprocedure, pg_get_function_result(p.oid), p.prosecdef, p.proconfig
  FROM pg_proc p WHERE p.pronamespace = 'kafka_lake'::regnamespace AND p.proname LIKE 'regress_g%' ORDER BY 1::text;

-- who may define: EXECUTE on the function, and SELECT on the source's records
CREATE ROLE regress_g_plain;
GRANT USAGE ON SCHEMA kafka_lake TO regress_g_plain;
SET ROLE regress_g_plain;
SELECT pg_temp.error_of($$SELECT kafka_lake.define_gold('regress_g', 'g2', ARRAY['country'], '{"n": {"count": "*"}}')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.add_check('regress_g', 'c2', 'SELECT 1 FROM silver')$$);
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.regress_g_daily_current$$);
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.regress_g_daily_as_of(1)$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text),
                          kafka_lake.add_check(text, text, text) TO regress_g_plain;
SET ROLE regress_g_plain;
SELECT pg_temp.error_of($$SELECT kafka_lake.define_gold('regress_g', 'g2', ARRAY['country'], '{"n": {"count": "*"}}')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.add_check('regress_g', 'c2', 'SELECT 1 FROM silver')$$);
RESET ROLE;
GRANT SELECT ON kafka_lake.regress_g_records TO regress_g_plain;
SET ROLE regress_g_plain;
-- reading the source is not enough: a gold or a check gates its publication (TRIGGER)
SELECT pg_temp.error_of($$SELECT kafka_lake.define_gold('regress_g', 'regress_g_plain_gold', ARRAY['country'], '{"n": {"count": "*"}}')$$);
SELECT pg_temp.error_of($$SELECT kafka_lake.add_check('regress_g', 'c2', 'SELECT 1 FROM silver')$$);
RESET ROLE;
GRANT TRIGGER ON kafka_lake.regress_g_records TO regress_g_plain;
SET ROLE regress_g_plain;
SELECT pg_temp.error_of($$SELECT kafka_lake.define_gold('regress_g', 'regress_g_plain_gold', ARRAY['country'], '{"n": {"count": "*"}}')$$);
SELECT pg_temp.error_of($$SELECT * FROM kafka_lake.regress_g_plain_gold_as_of(1)$$);
SELECT count(*) FROM kafka_lake.regress_g_plain_gold_current;
RESET ROLE;

-- drop_source takes the source's silver, golds and checks with it
SELECT kafka_lake.drop_source('regress_g');
SELECT relname FROM pg_class WHERE relnamespace = 'kafka_lake'::regnamespace AND relname LIKE 'regress_g%' ORDER BY 1;
SELECT proname FROM pg_proc WHERE pronamespace = 'kafka_lake'::regnamespace AND proname LIKE 'regress_g%' ORDER BY 1;
SELECT count(*) FROM kafka_lake.golds WHERE NOT builtin;
SELECT count(*) FROM kafka_lake.quality_checks;
SELECT kafka_lake.drop_source('regress_g_raw');
REVOKE ALL ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text),
                       kafka_lake.add_check(text, text, text) FROM regress_g_plain;
REVOKE ALL ON SCHEMA kafka_lake FROM regress_g_plain;
DROP ROLE regress_g_plain;
DROP SERVER regress_g_srv;
DROP EXTENSION kafka_lake;
