-- test/pgtap/96_harden_types.sql: a type that a definition names is code, and kafka_lake runs
-- no role's type with anyone else's rights.  A plain role owns a domain whose CHECK calls its
-- own function, which records who ran it and tries ALTER ROLE ... SUPERUSER.  Named as a SQL
-- gold's metric type (cast to it as the extension's owner when the gold is published), as a
-- contract field's sql_type (its input function and CHECK run in silver's load and in every
-- read of <source>_events), or as a column type of the role's own foreign table (run by the
-- scan as whoever reads it), it is refused when defined or met, and never runs.  A contract
-- version stored before this release with such a type is refused where it would be used.
-- Type names are resolved in pg_catalog, whatever the search_path: a type found only on the
-- caller's search_path is refused by create_contract, not accepted and then unusable.  Needs
-- the broker.
SELECT plan(17);

\o /dev/null
SELECT kl_test.server('types96_srv');
SELECT kl_test.broker('create types96.t 1');
SELECT kafka_lake.create_contract('sales96', $${
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
SELECT kafka_lake.create_source('types96', 'types96_srv', 'types96.t', contract => 'sales96');
SELECT kafka_lake.produce('types96_srv', 'types96.t',
         convert_to(format('{"sale_id": "s-%s", "day": "2026-07-02", "region": "north", "amount": %s}', i, i), 'UTF8'))
  FROM generate_series(1, 3) i;
SELECT kafka_lake.land('types96');
\o

DROP ROLE IF EXISTS t96_alice;
CREATE ROLE t96_alice;
GRANT USAGE ON SCHEMA kafka_lake TO t96_alice;
GRANT USAGE ON FOREIGN SERVER types96_srv TO t96_alice;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text),
                          kafka_lake.add_check(text, text, text),
                          kafka_lake.create_contract(text, json) TO t96_alice;
GRANT SELECT, TRIGGER ON kafka_lake.types96_records TO t96_alice;
CREATE SCHEMA t96 AUTHORIZATION t96_alice;

SET ROLE t96_alice;
CREATE TABLE t96.calls (who text, at timestamptz DEFAULT now());
GRANT ALL ON t96.calls TO PUBLIC;
GRANT USAGE ON SCHEMA t96 TO PUBLIC;
CREATE FUNCTION t96.up(v numeric) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO t96.calls (who) VALUES (current_user);
  BEGIN
    EXECUTE 'ALTER ROLE t96_alice SUPERUSER';
  EXCEPTION WHEN insufficient_privilege THEN NULL;
  END;
  RETURN true;
END $$;
CREATE DOMAIN t96.n AS bigint CHECK (t96.up(VALUE));

-- 1. a SQL gold's metric of the role's type
SELECT throws_ok($$SELECT kafka_lake.define_gold('types96', 'types96_by_region', grain => ARRAY['region'],
    sql => 'SELECT region, count(*)::t96.n AS n FROM silver GROUP BY region')$$,
                 '42P17', NULL, 'a SQL gold whose metric is of a domain of the role''s is refused when it is defined');
SELECT throws_ok($$SELECT kafka_lake.define_gold('types96', 'types96_by_region', grain => ARRAY['region'],
    sql => 'SELECT region, ROW(count(*)) AS n FROM silver GROUP BY region')$$,
                 '42P17', NULL, 'and one of a record type');
SELECT lives_ok($$SELECT kafka_lake.define_gold('types96', 'types96_by_region', grain => ARRAY['region'],
    sql => 'SELECT region, count(*)::bigint AS n, sum(amount) AS total FROM silver GROUP BY region')$$,
                'the same gold with the built-in type is defined');

-- 2. a contract field of the role's type
SELECT throws_ok($$SELECT kafka_lake.create_contract('c96_domain', '{"type": "object", "properties":
    {"id": {"type": "string"}, "day": {"type": "string", "format": "date"},
     "n": {"type": "integer", "sql_type": "t96.n"}}, "required": ["id", "day"], "event_id": "id",
    "business_date": {"field": "day"}}')$$,
                 '42P17', NULL, 'a contract whose sql_type is a domain is refused');
SELECT throws_ok($$SELECT kafka_lake.create_contract('c96_domain', '{"type": "object", "properties":
    {"id": {"type": "string"}, "n": {"type": "integer", "sql_type": "n"}}}')$$,
                 '42P17', NULL, 'also by its bare name');
RESET ROLE;

-- 3. a type found on the caller's search_path only: refused when defined, not later
CREATE SCHEMA shop96;
CREATE DOMAIN shop96.money96 AS numeric(12,2);
SET search_path = shop96, public;
SELECT throws_matching($$SELECT kafka_lake.create_contract('c96_shop', '{"type": "object", "properties":
    {"id": {"type": "string"}, "amount": {"type": "number", "sql_type": "money96"}}}')$$,
                       'type "money96" does not exist',
                       'create_contract resolves sql_type in pg_catalog only, not with the caller''s search_path');
SELECT is(kafka_lake.create_contract('c96_builtin', '{"type": "object", "properties":
    {"id": {"type": "string"}, "day": {"type": "string", "format": "date"},
     "amount": {"type": "number", "sql_type": "numeric(12,2)"}, "tags": {"type": "array", "sql_type": "jsonb"}},
    "required": ["id", "day"], "event_id": "id", "business_date": {"field": "day"}}'), 1,
          'a built-in type is accepted whatever the search_path');
RESET search_path;
SELECT lives_ok($$SELECT kafka_lake.create_source('types96_b', 'types96_srv', 'types96.t', contract => 'c96_builtin',
                                                  group_id => 'types96-b')$$,
                'and the source of that contract is created, with another search_path');

-- a contract version that an earlier release stored with the role's type (its create_contract
-- accepted any type): refused where a table would use it, and nothing of it runs
INSERT INTO kafka_lake.contracts (contract, version, definition) VALUES ('c96_legacy', 1,
  '{"type": "object", "properties": {"id": {"type": "string"}, "day": {"type": "string", "format": "date"},
    "n": {"type": "integer", "sql_type": "t96.n"}}, "required": ["id", "day"], "event_id": "id",
    "business_date": {"field": "day"}}');
SELECT throws_ok($$SELECT kafka_lake.create_source('types96_legacy', 'types96_srv', 'types96.t',
                                                   contract => 'c96_legacy', group_id => 'types96-legacy')$$,
                 '42P17', NULL, 'a stored contract version with a domain cannot make a source''s tables');
SELECT throws_ok($$SELECT kafka_lake.alter_source('types96_b', 'c96_legacy')$$,
                 '42P17', NULL, 'nor can a source move to it');

-- the role's own foreign table with its domain, read by a superuser
SET ROLE t96_alice;
CREATE FOREIGN TABLE t96.mine (amount t96.n) SERVER types96_srv OPTIONS (source 'types96', status 'accepted');
RESET ROLE;
SELECT throws_ok($$SELECT * FROM t96.mine$$, '0A000', NULL,
                 'a foreign table whose column is a domain is not read: the domain''s CHECK would run as the reader');
SELECT throws_ok($$EXPLAIN SELECT * FROM t96.mine$$, '0A000', NULL, 'nor explained');
SELECT throws_ok($$ANALYZE t96.mine$$, '0A000', NULL, 'nor analyzed');

-- the bridge, by a superuser: the gold is published with built-in types only
SELECT results_eq($$SELECT run_status, snapshot_status FROM kafka_lake.bridge('types96', '2026-07-02')$$,
                  $$VALUES ('processed', 'published')$$, 'the source bridges');
SELECT results_eq($$SELECT region, n, total FROM kafka_lake.types96_by_region_current$$,
                  $$VALUES ('north', 3::bigint, 6::numeric)$$, 'with its gold');

SELECT is((SELECT count(*)::int FROM t96.calls), 0, 'the role''s function never ran, as anyone');
SELECT ok(NOT (SELECT rolsuper FROM pg_roles WHERE rolname = 't96_alice'), 'and the role is no superuser');

SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('types96', drop_landing => true);
SELECT kafka_lake.drop_source('types96_b', drop_landing => true);
DELETE FROM kafka_lake.contracts WHERE contract IN ('sales96', 'c96_builtin', 'c96_legacy');
DROP SCHEMA t96 CASCADE;
DROP SCHEMA shop96 CASCADE;
REVOKE ALL ON SCHEMA kafka_lake FROM t96_alice;
REVOKE ALL ON FOREIGN SERVER types96_srv FROM t96_alice;
REVOKE ALL ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text), kafka_lake.add_check(text, text, text),
                       kafka_lake.create_contract(text, json) FROM t96_alice;
DROP SERVER types96_srv CASCADE;
DROP ROLE t96_alice;
\o
