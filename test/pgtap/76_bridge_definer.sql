-- test/pgtap/76_bridge_definer.sql: an owner's SQL in a gold or a check runs with the rights
-- of the role that defined it, never with those of whoever calls bridge().  A plain role
-- defines a SQL gold and a check; a superuser (as a pg_cron job would) bridges the source.
-- The gold records current_user and tries to read a server file (superusers only): it runs
-- as the plain role, and is refused.  The plain role owns its functions, so it could make one
-- SECURITY INVOKER (or give it away): the bridge then refuses to run it, and would run it as
-- the plain role all the same.  The plain role cannot define over a source it may not
-- read, nor use SQL that needs rights it lacks.  Needs the broker and kcat.
SELECT plan(19);

\o /dev/null
SELECT kl_test.server('definer76_srv');
SELECT kl_test.broker('create definer76.t 1');
SELECT kafka_lake.create_contract('sales76', $${
  "type": "object",
  "properties": {
    "sale_id": {"type": "string"},
    "day":     {"type": "string", "format": "date"},
    "region":  {"type": "string"},
    "amount":  {"type": "integer", "minimum": 0}
  },
  "required": ["sale_id", "day", "region", "amount"],
  "event_id": "sale_id",
  "business_date": {"field": "day"},
  "natural_key": ["sale_id"]
}$$);
SELECT kafka_lake.create_source('definer76', 'definer76_srv', 'definer76.t', contract => 'sales76');
SELECT kafka_lake.create_source('definer76_other', 'definer76_srv', 'definer76.t', contract => 'sales76',
                                group_id => 'definer76-other');
\o

DROP ROLE IF EXISTS t76_analyst;
CREATE ROLE t76_analyst;
GRANT USAGE ON SCHEMA kafka_lake TO t76_analyst;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text),
                          kafka_lake.add_check(text, text, text) TO t76_analyst;
-- reading the source, and gating it (TRIGGER: a gold or a check can stop its publication)
GRANT SELECT, TRIGGER ON kafka_lake.definer76_records TO t76_analyst;
CREATE SCHEMA t76 AUTHORIZATION t76_analyst;

-- the analyst's helper tries what only a superuser may do, as whoever runs it
SET ROLE t76_analyst;
CREATE FUNCTION t76.try_read_file() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_catalog.pg_read_file('PG_VERSION');
  RETURN 'read as ' || current_user;
EXCEPTION WHEN insufficient_privilege THEN
  RETURN 'refused as ' || current_user;
END $$;
SELECT lives_ok($$SELECT kafka_lake.define_gold('definer76', 'definer76_who', grain => ARRAY['region'],
    sql => 'SELECT region, current_user::text AS who, session_user::text AS session_role,
                   t76.try_read_file() AS attempt, sum(amount) AS amount FROM silver GROUP BY region')$$,
                'a plain role defines a SQL gold');
SELECT lives_ok($$SELECT kafka_lake.add_check('definer76', 'runs_as_analyst',
    'SELECT current_user FROM silver WHERE current_user <> ''t76_analyst''')$$,
                'and a check that fails unless it runs as that role');
SELECT throws_ok($$SELECT kafka_lake.define_gold('definer76', 'definer76_authid', grain => ARRAY['region'],
    sql => 'SELECT region, (SELECT count(*) FROM pg_catalog.pg_authid) AS roles FROM silver GROUP BY region')$$,
                 '42501', NULL, 'SQL that needs rights the role lacks is refused when it is defined');
SELECT throws_ok($$SELECT kafka_lake.define_gold('definer76_other', 'definer76_nope', grain => ARRAY['region'],
    metrics => '{"n": {"count": "*"}}')$$,
                 '42501', NULL, 'a role that may not read the source may not define a gold over it');
SELECT lives_ok($$SELECT count(*) FROM kafka_lake.definer76_silver$$,
                'the role was granted SELECT on the source''s silver, which its SQL reads');
RESET ROLE;

SELECT is((SELECT pg_get_userbyid(proowner)::text || ' ' || prosecdef::text || ' ' || array_to_string(proconfig, ',')
           FROM pg_proc WHERE oid = 'kafka_lake.definer76_who_compute(text)'::regprocedure),
          't76_analyst true search_path=pg_catalog, pg_temp',
          'the gold''s function is SECURITY DEFINER, owned by the role that defined it, search_path pinned');
SELECT is((SELECT count(*)::int FROM aclexplode((SELECT proacl FROM pg_proc
            WHERE oid = 'kafka_lake.definer76_who_compute(text)'::regprocedure)) a WHERE a.grantee = 0), 0,
          'and PUBLIC may not execute it');

-- a superuser bridges (as a pg_cron job of the superuser would)
\o /dev/null
SELECT kafka_lake.produce('definer76_srv', 'definer76.t',
         convert_to(format('{"sale_id": "s-%s", "day": "2026-07-01", "region": "%s", "amount": %s}',
                           i, CASE WHEN i % 2 = 0 THEN 'north' ELSE 'south' END, i), 'UTF8'))
  FROM generate_series(1, 4) i;
\o
SELECT results_eq($$SELECT accepted FROM kafka_lake.land('definer76')$$, $$VALUES (4)$$, 'four sales land');
SELECT ok((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), 'the caller of bridge() is a superuser');
SELECT results_eq($$SELECT run_status, quality_passed, quality_total FROM kafka_lake.bridge('definer76', '2026-07-01')$$,
                  $$VALUES ('processed', 7, 7)$$, 'the bridge runs, and the check that runs as the analyst passes');
SELECT results_eq($$SELECT region, who, attempt, amount FROM kafka_lake.definer76_who_current ORDER BY region$$,
                  $$VALUES ('north', 't76_analyst', 'refused as t76_analyst', 6::numeric),
                           ('south', 't76_analyst', 'refused as t76_analyst', 4::bigint)$$,
                  'the gold''s SQL ran as the analyst, who may not read a server file, not as the superuser');
SELECT is((SELECT DISTINCT session_role FROM kafka_lake.definer76_who_current), current_user::text,
          'in the superuser''s session');
SELECT is((SELECT t76.try_read_file()), 'read as ' || current_user,
          'the same helper, called by the superuser itself, reads the file: the rights were the definer''s');

-- the analyst turns its own functions into SECURITY INVOKER ones, hoping the next bridge by a
-- superuser runs them with the superuser's rights
SET ROLE t76_analyst;
ALTER FUNCTION kafka_lake.definer76_who_compute(text) SECURITY INVOKER;
RESET ROLE;
\o /dev/null
SELECT kafka_lake.produce('definer76_srv', 'definer76.t',
         convert_to('{"sale_id": "s-5", "day": "2026-07-01", "region": "north", "amount": 5}', 'UTF8'));
\o
SELECT results_eq($$SELECT accepted FROM kafka_lake.land('definer76')$$, $$VALUES (1)$$, 'a fifth sale lands');
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('definer76', '2026-07-01')$$, '42501', NULL,
                 'a gold function its definer made SECURITY INVOKER is refused, not run as the superuser');
SELECT results_eq($$SELECT who, attempt FROM kafka_lake.definer76_who_current ORDER BY region$$,
                  $$VALUES ('t76_analyst', 'refused as t76_analyst'), ('t76_analyst', 'refused as t76_analyst')$$,
                  'nothing was published by the refused bridge');
-- the hint's statement restores it
ALTER FUNCTION kafka_lake.definer76_who_compute(text) SECURITY DEFINER RESET ALL SET search_path = pg_catalog, pg_temp;
\o /dev/null
SELECT set_config('kl76.check_fn', (SELECT function FROM kafka_lake.quality_checks WHERE check_name = 'runs_as_analyst'), false);
\o
SET ROLE t76_analyst;
DO $$BEGIN EXECUTE format('ALTER FUNCTION kafka_lake.%I(text) SECURITY INVOKER', current_setting('kl76.check_fn')); END$$;
RESET ROLE;
SELECT throws_ok($$SELECT * FROM kafka_lake.bridge('definer76', '2026-07-01')$$, '42501', NULL,
                 'so is a check function made SECURITY INVOKER');
DO $$BEGIN EXECUTE format('ALTER FUNCTION kafka_lake.%I(text) SECURITY DEFINER', current_setting('kl76.check_fn')); END$$;
SELECT results_eq($$SELECT run_status, quality_passed, quality_total FROM kafka_lake.bridge('definer76', '2026-07-01')$$,
                  $$VALUES ('processed', 7, 7)$$, 'restored as they were defined, both run again, as the analyst');

SELECT lives_ok($$SELECT kafka_lake.drop_source('definer76', drop_landing => true)$$, 'drop_source');
SELECT * FROM finish();
\o /dev/null
SELECT kafka_lake.drop_source('definer76_other', drop_landing => true);
DROP SCHEMA t76 CASCADE;
REVOKE ALL ON SCHEMA kafka_lake FROM t76_analyst;
REVOKE ALL ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text), kafka_lake.add_check(text, text, text) FROM t76_analyst;
DROP ROLE t76_analyst;
\o
