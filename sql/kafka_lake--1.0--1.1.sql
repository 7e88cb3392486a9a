/* sql/kafka_lake--1.0--1.1.sql
 *
 * Upgrade of kafka_lake 1.0 to 1.1.  kafka_lake--1.0.sql is released and
 * never changes: every catalog or function change of 1.1 is made here, so a
 * database created at 1.0 and one created at 1.1 end with the same objects
 * (test/t/35_upgrade.sh checks both paths).  Everything a 1.0 installation
 * landed stays readable, verifiable and bridgeable after
 * ALTER EXTENSION kafka_lake UPDATE.
 *
 * The sections follow the order of the changes; each says what it changes
 * and why.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.1'" to load this file. \quit

--------------------------------------------------------------------------
-- Security: the install script's functions resolve names in pg_catalog only,
-- and none is executable by PUBLIC
--
-- event_key() of 1.0 ran with its caller's search_path: a superuser whose
-- search_path held a schema that another role can write would have run that
-- role's "=", "||" or sha256() with superuser rights.  It now pins its
-- search_path as gold_as_of() does (pg_temp last, so that nothing temporary
-- shadows a catalog object).  It was also the one function left executable
-- by PUBLIC; it reads kafka_lake.sources, which PUBLIC may not read, so the
-- grant gave nothing but a way in: it is now granted like every other
-- function.  (The C functions pin search_path around their own catalog
-- queries, see src/catalog.c; the views resolved their functions and
-- operators when they were created.)
--------------------------------------------------------------------------

ALTER FUNCTION kafka_lake.event_key(text, text) SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION kafka_lake.event_key(text, text) FROM PUBLIC;
