-- test/pgtap/44_fdw_privileges.sql: reading is governed by GRANT SELECT on
-- the foreign table.  A role without it gets 42501; with it, the role reads
-- rows although it has no privilege on the kafka_lake catalog (the scan
-- reads the catalog as the extension's owner).  Column privileges work the
-- same way; a table reads only sources of its own server.  USAGE on the
-- server does not open a source: reading one through a foreign table of
-- one's own (declared with OPTIONS (source ...)) needs SELECT on the
-- source's own kafka_lake.<source>_records, checked when the table is
-- declared and when it is read, for the role the scan runs as (a view's
-- owner, or the caller).  Needs the broker.
SET client_min_messages = warning;
SELECT plan(27);

CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || ': ' || msg;
END $$;
CREATE FUNCTION pg_temp.count_of(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE q INTO n;
  RETURN n;
END $$;

\o /dev/null
SELECT kl_test.server('fdw44_kafka');
SELECT kl_test.broker('create fdw44.events 1');
SELECT kafka_lake.create_source('fdw44', 'fdw44_kafka', 'fdw44.events');
SELECT kl_test.fill('fdw44.events', 10, 1);
SELECT * FROM kafka_lake.land('fdw44');
\o
CREATE ROLE fdw44_reader;
GRANT USAGE ON SCHEMA kafka_lake TO fdw44_reader;
CREATE FOREIGN TABLE public.fdw44_units (event_id text, units_produced int)
  SERVER fdw44_kafka OPTIONS (source 'fdw44', status 'accepted');

-- without SELECT: 42501, also for EXPLAIN
SET ROLE fdw44_reader;
SELECT pg_temp.error_of('SELECT count(*) FROM kafka_lake.fdw44_records') AS e1,
       pg_temp.error_of('EXPLAIN SELECT * FROM kafka_lake.fdw44_records') AS e2,
       pg_temp.error_of('SELECT sum(units_produced) FROM public.fdw44_units') AS e3 \gset
RESET ROLE;
SELECT is(:'e1'::text, '42501: permission denied for foreign table fdw44_records',
          'a role without SELECT on the foreign table gets 42501');
SELECT is(:'e2'::text, '42501: permission denied for foreign table fdw44_records', 'EXPLAIN too');
SELECT is(:'e3'::text, '42501: permission denied for foreign table fdw44_units', 'a user-declared table too');

-- with SELECT: rows, and still no privilege on the catalog
GRANT SELECT ON kafka_lake.fdw44_records TO fdw44_reader;
GRANT SELECT ON public.fdw44_units TO fdw44_reader;
SET ROLE fdw44_reader;
SELECT pg_temp.count_of('SELECT count(*) FROM kafka_lake.fdw44_records') AS n1,
       pg_temp.count_of('SELECT count(*) FROM kafka_lake.fdw44_records WHERE "partition" = 0 AND status = ''accepted''') AS n2,
       pg_temp.count_of('SELECT sum(units_produced) FROM public.fdw44_units') AS s1,
       pg_temp.error_of('SELECT count(*) FROM kafka_lake.batches') AS e4,
       pg_temp.error_of('SELECT count(*) FROM kafka_lake.coordinates') AS e5,
       pg_temp.error_of('SELECT count(*) FROM kafka_lake.sources') AS e6,
       pg_temp.error_of('SELECT kafka_lake.verify(''fdw44'')') AS e7 \gset
RESET ROLE;
SELECT is(:n1::int, 10, 'with GRANT SELECT the role reads every row');
SELECT is(:n2::int, 10, 'pruned scans too');
SELECT is(:s1::bigint, (SELECT sum(units_produced) FROM public.fdw44_units), 'and typed tables');
SELECT is(:'e4'::text, '42501: permission denied for table batches', 'while it cannot read kafka_lake.batches');
SELECT is(:'e5'::text, '42501: permission denied for table coordinates', 'nor kafka_lake.coordinates');
SELECT is(:'e6'::text, '42501: permission denied for table sources', 'nor kafka_lake.sources');
SELECT is(:'e7'::text, '42501: permission denied for function verify', 'nor run verify()');

-- column privileges
REVOKE SELECT ON kafka_lake.fdw44_records FROM fdw44_reader;
GRANT SELECT (event_id, business_date) ON kafka_lake.fdw44_records TO fdw44_reader;
SET ROLE fdw44_reader;
SELECT pg_temp.count_of('SELECT count(event_id) FROM kafka_lake.fdw44_records WHERE business_date = ''2026-06-29''') AS n3,
       pg_temp.error_of('SELECT key FROM kafka_lake.fdw44_records') AS e8 \gset
RESET ROLE;
SELECT is(:n3::int, 10, 'a column privilege reads that column');
SELECT is(:'e8'::text, '42501: permission denied for foreign table fdw44_records', 'and only that column');

-- REVOKE takes it away again
REVOKE ALL ON kafka_lake.fdw44_records FROM fdw44_reader;
SET ROLE fdw44_reader;
SELECT pg_temp.error_of('SELECT count(*) FROM kafka_lake.fdw44_records') AS e9 \gset
RESET ROLE;
SELECT is(:'e9'::text, '42501: permission denied for foreign table fdw44_records', 'after REVOKE: 42501');

-- a table on another server cannot read this source: USAGE on a server
-- gates which landings its foreign tables read
SELECT kl_test.server('fdw44_other');
CREATE FOREIGN TABLE public.fdw44_elsewhere (event_id text)
  SERVER fdw44_other OPTIONS (source 'fdw44');
SELECT is(pg_temp.error_of('SELECT count(*) FROM public.fdw44_elsewhere'),
          'HV024: foreign table "fdw44_elsewhere" is on server "fdw44_other", but source "fdw44" lands from server "fdw44_kafka"',
          'a foreign table reads only sources of its own server');
SELECT is(pg_temp.error_of('ANALYZE public.fdw44_elsewhere'),
          'HV024: foreign table "fdw44_elsewhere" is on server "fdw44_other", but source "fdw44" lands from server "fdw44_kafka"',
          'ANALYZE too');
DROP FOREIGN TABLE public.fdw44_elsewhere;
DROP SERVER fdw44_other;

-- USAGE on the server does not open a source: a role that was never granted
-- SELECT on kafka_lake.fdw44_records (nor USAGE on schema kafka_lake) declares
-- its own foreign table over it
CREATE ROLE fdw44_outsider;
CREATE SCHEMA fdw44_outsider AUTHORIZATION fdw44_outsider;
GRANT USAGE ON FOREIGN SERVER fdw44_kafka TO fdw44_outsider;
SET ROLE fdw44_outsider;
SELECT pg_temp.error_of($$CREATE FOREIGN TABLE fdw44_outsider.stolen (event_id text, units_produced int)
  SERVER fdw44_kafka OPTIONS (source 'fdw44')$$) AS o1 \gset
RESET ROLE;
SELECT is(:'o1'::text, '42501: permission denied to read source "fdw44"',
          'USAGE on the server does not let a role declare a table over a source it may not read');
-- a table it got by other means (declared by someone else, then handed over)
CREATE FOREIGN TABLE fdw44_outsider.stolen (event_id text, units_produced int)
  SERVER fdw44_kafka OPTIONS (source 'fdw44');
ALTER FOREIGN TABLE fdw44_outsider.stolen OWNER TO fdw44_outsider;
SET ROLE fdw44_outsider;
SELECT pg_temp.error_of('SELECT count(*) FROM fdw44_outsider.stolen') AS o2,
       pg_temp.error_of('EXPLAIN SELECT * FROM fdw44_outsider.stolen') AS o3,
       pg_temp.error_of('ANALYZE fdw44_outsider.stolen') AS o4,
       pg_temp.error_of($$ALTER FOREIGN TABLE fdw44_outsider.stolen OPTIONS (SET source 'fdw44')$$) AS o5,
       pg_temp.error_of('CREATE VIEW fdw44_outsider.v AS SELECT * FROM fdw44_outsider.stolen') AS o6 \gset
SELECT pg_temp.error_of('SELECT count(*) FROM fdw44_outsider.v') AS o7 \gset
RESET ROLE;
SELECT is(:'o2'::text, '42501: permission denied to read source "fdw44"', 'reading it is refused');
SELECT is(:'o3'::text, '42501: permission denied to read source "fdw44"', 'EXPLAIN too');
SELECT is(:'o4'::text, '42501: permission denied to read source "fdw44"', 'ANALYZE too');
SELECT is(:'o5'::text, '42501: permission denied to read source "fdw44"', 'and ALTER ... OPTIONS (SET source)');
SELECT is(:'o7'::text, '42501: permission denied to read source "fdw44"', 'a view of its own does not help');
-- a role that has SELECT on only some columns of the source's table does not
-- read the rest through a table of its own
GRANT USAGE ON SCHEMA kafka_lake TO fdw44_outsider;
GRANT SELECT (event_id) ON kafka_lake.fdw44_records TO fdw44_outsider;
SET ROLE fdw44_outsider;
SELECT pg_temp.error_of('SELECT sum(units_produced) FROM fdw44_outsider.stolen') AS o8 \gset
RESET ROLE;
SELECT is(:'o8'::text, '42501: permission denied to read source "fdw44"',
          'SELECT on some columns of the source''s table is not enough');
-- the allowed path: SELECT on the source's table
GRANT SELECT ON kafka_lake.fdw44_records TO fdw44_outsider;
SET ROLE fdw44_outsider;
SELECT pg_temp.count_of('SELECT count(*) FROM fdw44_outsider.stolen') AS o9,
       pg_temp.error_of($$CREATE FOREIGN TABLE fdw44_outsider.allowed (units_produced int)
         SERVER fdw44_kafka OPTIONS (source 'fdw44', status 'accepted')$$) AS o10 \gset
SELECT pg_temp.count_of('SELECT sum(units_produced) FROM fdw44_outsider.allowed') AS o11 \gset
RESET ROLE;
SELECT is(:o9::int, 10, 'with SELECT on the source''s table the role reads through its own table');
SELECT is(:'o10'::text, 'no error', 'and declares new ones');
SELECT is(:o11::bigint, (SELECT sum(units_produced) FROM public.fdw44_units), 'which read the same rows');
-- a view owned by a role that may read the source gives a narrower window
-- to a role that may not
REVOKE SELECT ON kafka_lake.fdw44_records FROM fdw44_reader;
CREATE VIEW public.fdw44_window AS SELECT event_id FROM public.fdw44_units;
GRANT SELECT ON public.fdw44_window TO fdw44_reader;
SET ROLE fdw44_reader;
SELECT pg_temp.count_of('SELECT count(*) FROM public.fdw44_window') AS w1,
       pg_temp.error_of('SELECT count(*) FROM public.fdw44_units') AS w2 \gset
RESET ROLE;
SELECT is(:w1::int, 10, 'a view''s owner reads for the view''s readers');
SELECT is(:'w2'::text, '42501: permission denied to read source "fdw44"',
          'while the reader itself, without SELECT on the source''s table, cannot read the typed table');
DROP VIEW public.fdw44_window;
DROP SCHEMA fdw44_outsider CASCADE;
REVOKE ALL ON kafka_lake.fdw44_records FROM fdw44_outsider;
REVOKE USAGE ON SCHEMA kafka_lake FROM fdw44_outsider;
REVOKE USAGE ON FOREIGN SERVER fdw44_kafka FROM fdw44_outsider;
DROP ROLE fdw44_outsider;

REVOKE ALL ON public.fdw44_units FROM fdw44_reader;
DROP FOREIGN TABLE public.fdw44_units;
REVOKE USAGE ON SCHEMA kafka_lake FROM fdw44_reader;
DROP ROLE fdw44_reader;
SELECT * FROM finish();
