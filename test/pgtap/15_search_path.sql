-- test/pgtap/15_search_path.sql: a role's own search_path never decides which
-- function or operator kafka_lake's catalog queries run.  kafka_lake reads and
-- writes its catalog as the extension's owner (a superuser); a role that puts
-- its own strpos(text, text), "=" operators, int8range(), lower(), upper() and
-- nextval() first on its search_path must not get them called with the
-- owner's rights: not by a scan of kafka_lake.<source>_records (the only
-- right it has there is SELECT), not by EXPLAIN or ANALYZE, not by any
-- function it was granted, and a superuser whose search_path holds such a
-- schema does not run them through event_key() either.  The role's functions
-- count every call made with superuser rights in a sequence (sequences are
-- not rolled back, so an error in the call does not hide the count).
-- Needs the broker.
SET client_min_messages = warning;
SELECT plan(22);

\o /dev/null
SELECT kl_test.server('sec15_kafka');
SELECT kl_test.broker('create sec15.events 2');
SELECT kafka_lake.create_source('sec15', 'sec15_kafka', 'sec15.events');
SELECT kl_test.fill('sec15.events', 20, 2);
SELECT * FROM kafka_lake.land('sec15');
\o

CREATE ROLE kl15_evil;
CREATE SCHEMA kl15_evil AUTHORIZATION kl15_evil;
GRANT USAGE ON SCHEMA kafka_lake TO kl15_evil;
GRANT USAGE ON FOREIGN SERVER sec15_kafka TO kl15_evil;
GRANT SELECT ON kafka_lake.sec15_records TO kl15_evil;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kafka_lake TO kl15_evil;

-- escalations(q): how many calls the role's functions got with superuser
-- rights while q ran (q's own error, if any, is swallowed)
CREATE FUNCTION pg_temp.escalations(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  before bigint;
  after bigint;
BEGIN
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO before FROM kl15_evil.escalations;
  BEGIN
    EXECUTE q;
  EXCEPTION WHEN OTHERS THEN
    NULL;
  END;
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO after FROM kl15_evil.escalations;
  RETURN after OPERATOR(pg_catalog.-) before;
END $$;
CREATE FUNCTION pg_temp.calls() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM kl15_evil.calls);
END $$;

-- the role's own functions and operators, in its own schema
SET ROLE kl15_evil;
CREATE SEQUENCE kl15_evil.calls;
CREATE SEQUENCE kl15_evil.escalations;
CREATE FUNCTION kl15_evil.note() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_catalog.nextval('kl15_evil.calls'::pg_catalog.regclass);
  IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r
      WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
    -- here the role could do anything a superuser can
    PERFORM pg_catalog.nextval('kl15_evil.escalations'::pg_catalog.regclass);
  END IF;
END $$;
CREATE FUNCTION kl15_evil.text_eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR kl15_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = kl15_evil.text_eq);
CREATE FUNCTION kl15_evil.int4_eq(a integer, b integer) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR kl15_evil.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = kl15_evil.int4_eq);
CREATE FUNCTION kl15_evil.int8_ge(a bigint, b bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN a OPERATOR(pg_catalog.>=) b; END $$;
CREATE OPERATOR kl15_evil.>= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = kl15_evil.int8_ge);
CREATE FUNCTION kl15_evil.strpos(a text, b text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN pg_catalog.strpos(a, b); END $$;
CREATE FUNCTION kl15_evil.int8range(a bigint, b bigint, c text) RETURNS int8range LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN pg_catalog.int8range(a, b, c); END $$;
CREATE FUNCTION kl15_evil.lower(r int8range) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN pg_catalog.lower(r); END $$;
CREATE FUNCTION kl15_evil.upper(r int8range) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN pg_catalog.upper(r); END $$;
CREATE FUNCTION kl15_evil.nextval(s regclass) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN PERFORM kl15_evil.note(); RETURN pg_catalog.nextval(s); END $$;
-- a foreign table of its own over the source (it may read the source)
CREATE FOREIGN TABLE kl15_evil.mine (event_id text, units_produced int)
  SERVER sec15_kafka OPTIONS (source 'sec15', status 'accepted');

SET search_path = kl15_evil, pg_catalog;
SELECT pg_temp.calls() AS calls_before \gset
SELECT 'a'::text = 'a'::text AS own_op \gset
SELECT pg_temp.calls() AS calls_after \gset
SELECT pg_temp.escalations($$SELECT count(*) FROM kafka_lake.sec15_records$$) AS e_scan,
       pg_temp.escalations($$SELECT count(*) FROM kafka_lake.sec15_records
                             WHERE partition = 1 AND status = 'accepted' AND "offset" >= 2$$) AS e_pruned,
       pg_temp.escalations($$EXPLAIN SELECT * FROM kafka_lake.sec15_records WHERE batch_id = 'x'$$) AS e_explain,
       pg_temp.escalations($$SELECT sum(units_produced) FROM kl15_evil.mine$$) AS e_own_table,
       pg_temp.escalations($$ANALYZE kl15_evil.mine$$) AS e_analyze,
       pg_temp.escalations($$SELECT * FROM kafka_lake.land('sec15')$$) AS e_land,
       pg_temp.escalations($$SELECT * FROM kafka_lake.replay('sec15', 0, 0, 1)$$) AS e_replay,
       pg_temp.escalations($$SELECT * FROM kafka_lake.recover('sec15')$$) AS e_recover,
       pg_temp.escalations($$SELECT * FROM kafka_lake.verify('sec15')$$) AS e_verify,
       pg_temp.escalations($$SELECT * FROM kafka_lake.lag('sec15')$$) AS e_lag,
       pg_temp.escalations($$SELECT * FROM kafka_lake.bridge('sec15', '2026-06-29')$$) AS e_bridge,
       pg_temp.escalations($$SELECT * FROM kafka_lake.gold_as_of(1)$$) AS e_gold_as_of,
       pg_temp.escalations($$SELECT kafka_lake.produce('sec15_kafka', 'sec15.events', '\x00')$$) AS e_produce,
       pg_temp.escalations($$SELECT kafka_lake.create_source('sec15_b', 'sec15_kafka', 'sec15.b')$$) AS e_create,
       pg_temp.escalations($$SELECT kafka_lake.drop_source('sec15_b', drop_landing => true)$$) AS e_drop,
       pg_temp.escalations($$SELECT kafka_lake.event_key('sec15', 'evt-1')$$) AS e_event_key_own \gset
RESET search_path;
RESET ROLE;

SELECT ok(:'own_op'::boolean AND :calls_after > :calls_before,
          'the role''s own "=" is first on its search_path (its own queries call it)');
SELECT is(:e_scan::bigint, 0::bigint, 'a scan of <source>_records calls none of the role''s functions as superuser');
SELECT is(:e_pruned::bigint, 0::bigint, 'a pruned scan neither');
SELECT is(:e_explain::bigint, 0::bigint, 'EXPLAIN neither');
SELECT is(:e_own_table::bigint, 0::bigint, 'a scan of the role''s own foreign table neither');
SELECT is(:e_analyze::bigint, 0::bigint, 'ANALYZE of it neither');
SELECT is(:e_land::bigint, 0::bigint, 'land() neither');
SELECT is(:e_replay::bigint, 0::bigint, 'replay() neither');
SELECT is(:e_recover::bigint, 0::bigint, 'recover() neither');
SELECT is(:e_verify::bigint, 0::bigint, 'verify() neither');
SELECT is(:e_lag::bigint, 0::bigint, 'lag() neither');
SELECT is(:e_bridge::bigint, 0::bigint, 'bridge() neither');
SELECT is(:e_gold_as_of::bigint, 0::bigint, 'gold_as_of() neither');
SELECT is(:e_produce::bigint, 0::bigint, 'produce() neither');
SELECT is(:e_create::bigint, 0::bigint, 'create_source() neither');
SELECT is(:e_drop::bigint, 0::bigint, 'drop_source() neither');
SELECT is(:e_event_key_own::bigint, 0::bigint, 'event_key() neither');
SELECT ok(NOT (SELECT rolsuper FROM pg_roles WHERE rolname = 'kl15_evil'), 'the role is still not a superuser');
SELECT is((SELECT count(*)::int FROM kafka_lake.sources WHERE source = 'sec15_b'), 0,
          'the role''s create_source and drop_source did their work');

-- a superuser whose search_path holds the role's schema (its own operators
-- would run the role's, so it writes none)
SET search_path = kl15_evil, pg_catalog, public;
SELECT pg_temp.escalations($$SELECT kafka_lake.event_key('sec15', 'evt-1')$$) AS e_event_key,
       pg_temp.escalations($$SELECT count(*) FROM kafka_lake.sec15_records$$) AS e_su_scan \gset
RESET search_path;
SELECT is(:e_event_key::bigint, 0::bigint, 'event_key() pins its search_path: a superuser caller does not run the role''s operators');
SELECT is(:e_su_scan::bigint, 0::bigint, 'nor does a superuser''s scan');

-- the 1.0 install script left event_key executable by PUBLIC
SELECT ok(NOT has_function_privilege('public', 'kafka_lake.event_key(text, text)', 'EXECUTE'),
          'event_key() is not executable by PUBLIC');

\o /dev/null
SELECT kafka_lake.drop_source('sec15', drop_landing => true);
\o
DROP SCHEMA kl15_evil CASCADE;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA kafka_lake FROM kl15_evil;
REVOKE USAGE ON SCHEMA kafka_lake FROM kl15_evil;
REVOKE USAGE ON FOREIGN SERVER sec15_kafka FROM kl15_evil;
DROP SERVER sec15_kafka;
DROP ROLE kl15_evil;
SELECT * FROM finish();
