/* sql/kafka_lake--1.5--1.6.sql
 *
 * Upgrade of kafka_lake 1.5 to 1.6.  The scripts up to 1.5 are released and
 * never change: every catalog or function change of 1.6 is made here, so
 * that a database created at an earlier version and one created at 1.6 end
 * with the same objects (test/t/99b_upgrade_1_6.sh checks the path).
 * Everything landed, bridged and closed before stays readable, verifiable
 * and bridgeable as it was: a source of one topic stays what it was.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.6'" to load this file. \quit

-- several topics per source
--
-- A source may land several topics of one server with one contract
-- (orders.eu and orders.us): sources.topic holds them as Kafka Connect's
-- "topics" setting writes them, separated by commas, in the order given.
-- Every table that names a coordinate already had its topic, except two:
-- accepted_events (which coordinate holds an event_id) and
-- date_closing_partitions (through which offset a date is complete).
ALTER TABLE kafka_lake.sources DROP CONSTRAINT sources_topic_check;
ALTER TABLE kafka_lake.sources ADD CONSTRAINT sources_topic_check
    CHECK (topic ~ '^[A-Za-z0-9._-]{1,249}(,[A-Za-z0-9._-]{1,249})*$'
           AND NOT pg_catalog.string_to_array(topic, ',') && ARRAY['.', '..']);
COMMENT ON COLUMN kafka_lake.sources.topic IS
  'The topic the source lands, or its topics separated by commas (in the order given to create_source)';

-- NULL: the source's first topic (every row of a source of one topic), so
-- that the column costs a single-topic source nothing
ALTER TABLE kafka_lake.accepted_events ADD COLUMN topic text;
COMMENT ON COLUMN kafka_lake.accepted_events.topic IS
  'The topic of the coordinate that carried the event_id; NULL for the source''s first topic';

ALTER TABLE kafka_lake.date_closing_partitions ADD COLUMN topic text;
UPDATE kafka_lake.date_closing_partitions p
   SET topic = pg_catalog.split_part(s.topic, ',', 1)
  FROM kafka_lake.date_closings c JOIN kafka_lake.sources s USING (source_id)
 WHERE c.closing_id = p.closing_id;
ALTER TABLE kafka_lake.date_closing_partitions
    ALTER COLUMN topic SET NOT NULL,
    DROP CONSTRAINT date_closing_partitions_pkey,
    ADD PRIMARY KEY (closing_id, topic, partition);

-- replay() of an offset range and exclude()/unexclude() by coordinate name
-- a partition, which for a source of several topics needs its topic: each
-- takes a last argument topic (NULL: the source's only topic).  The new
-- functions are made beside the old ones, take their grants, and the old
-- ones go.
CREATE FUNCTION kafka_lake.upgrade_copy_grants(old pg_catalog.regprocedure,
                                               new pg_catalog.regprocedure)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    grantee text;
BEGIN
    FOR grantee IN
        SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                             ELSE pg_catalog.quote_ident(r.rolname) END
          FROM pg_catalog.pg_proc p
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
          LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
         WHERE p.oid = old AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', new, grantee);
    END LOOP;
END
$$;

CREATE FUNCTION kafka_lake.replay(
    source      text,
    partition   integer,
    from_offset bigint,
    to_offset   bigint,
    timeout     interval DEFAULT '30 s',
    topic       text DEFAULT NULL,
    OUT topic text, OUT partition integer, OUT batch_id text, OUT status text,
    OUT records integer, OUT accepted integer, OUT duplicates integer,
    OUT quarantined integer, OUT reused integer,
    OUT first_offset bigint, OUT last_offset bigint, OUT committed_offset bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_replay'
LANGUAGE C;
COMMENT ON FUNCTION kafka_lake.replay(text, integer, bigint, bigint, interval, text) IS
  'Read an inclusive offset range of a partition (of topic, for a source of several) again: land what is not yet durable, report the rest as reused; never commits';
REVOKE ALL ON FUNCTION kafka_lake.replay(text, integer, bigint, bigint, interval, text) FROM PUBLIC;
SELECT kafka_lake.upgrade_copy_grants('kafka_lake.replay(text, integer, bigint, bigint, interval)',
                                      'kafka_lake.replay(text, integer, bigint, bigint, interval, text)');
DROP FUNCTION kafka_lake.replay(text, integer, bigint, bigint, interval);

CREATE FUNCTION kafka_lake.exclude(
    source      text,
    event_id    text DEFAULT NULL,
    "partition" integer DEFAULT NULL,
    "offset"    bigint DEFAULT NULL,
    reason      text DEFAULT NULL,
    topic       text DEFAULT NULL,
    OUT exclusion_id text, OUT action text, OUT topic text, OUT "partition" integer,
    OUT "offset" bigint, OUT batch_id text, OUT event_id text, OUT status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_exclude'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.exclude(text, text, integer, bigint, text, text) IS
  'Set an accepted record aside (by event_id, or by partition and offset, and topic for a source of several; a reason is required); its event_id''s earliest duplicate is accepted in its place';
REVOKE ALL ON FUNCTION kafka_lake.exclude(text, text, integer, bigint, text, text) FROM PUBLIC;
SELECT kafka_lake.upgrade_copy_grants('kafka_lake.exclude(text, text, integer, bigint, text)',
                                      'kafka_lake.exclude(text, text, integer, bigint, text, text)');
DROP FUNCTION kafka_lake.exclude(text, text, integer, bigint, text);

CREATE FUNCTION kafka_lake.unexclude(
    source      text,
    event_id    text DEFAULT NULL,
    "partition" integer DEFAULT NULL,
    "offset"    bigint DEFAULT NULL,
    reason      text DEFAULT NULL,
    topic       text DEFAULT NULL,
    OUT exclusion_id text, OUT action text, OUT topic text, OUT "partition" integer,
    OUT "offset" bigint, OUT batch_id text, OUT event_id text, OUT status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_unexclude'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.unexclude(text, text, integer, bigint, text, text) IS
  'Undo an exclusion in effect: the record is accepted again, the duplicate promoted in its place a duplicate again';
REVOKE ALL ON FUNCTION kafka_lake.unexclude(text, text, integer, bigint, text, text) FROM PUBLIC;
SELECT kafka_lake.upgrade_copy_grants('kafka_lake.unexclude(text, text, integer, bigint, text)',
                                      'kafka_lake.unexclude(text, text, integer, bigint, text, text)');
DROP FUNCTION kafka_lake.unexclude(text, text, integer, bigint, text);

DROP FUNCTION kafka_lake.upgrade_copy_grants(pg_catalog.regprocedure, pg_catalog.regprocedure);

COMMENT ON FUNCTION kafka_lake.create_source(text, text, text, text, text) IS
  'Record a source (a topic of a kafka_lake server, or several separated by commas) and create its foreign table kafka_lake.<source>_records';
