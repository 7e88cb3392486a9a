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

-- source_status shows a failed call's error on its topic's partition only:
-- source_errors() gets a last column topic_index (the partition's topic
-- among the source's, from 0).  Its result type changes, so the view reads
-- no errors while the function is made again, then reads the new one; made
-- with CREATE OR REPLACE, the view keeps its grants.
CREATE OR REPLACE VIEW kafka_lake.source_status AS
    WITH errors AS MATERIALIZED (SELECT NULL::integer AS source_id, NULL::integer AS partition, NULL::text AS sqlstate,
                                       NULL::text AS message, NULL::timestamptz AS failed_at WHERE false),
    parts AS (
        SELECT source_id, topic, partition FROM kafka_lake.partition_state
        UNION
        SELECT DISTINCT source_id, topic, partition FROM kafka_lake.batches
    ),
    landed AS (
        SELECT b.source_id, b.topic, b.partition,
               pg_catalog.count(*) AS batches,
               pg_catalog.sum(CASE WHEN b.expired_at IS NULL
                                   THEN b.file_bytes[1] + b.file_bytes[2] + b.file_bytes[3]
                                   ELSE 0 END
                              + coalesce(b.manifest_bytes, 0)) AS bytes,
               pg_catalog.max(b.created_at) AS last_batch_at,
               pg_catalog.sum(b.accepted_count) AS accepted,
               pg_catalog.sum(b.duplicate_count) AS duplicates,
               pg_catalog.sum(b.quarantine_count) AS quarantined,
               pg_catalog.sum(b.accepted_count) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS accepted_24h,
               pg_catalog.sum(b.duplicate_count) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS duplicates_24h,
               pg_catalog.sum(b.quarantine_count) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS quarantined_24h
        FROM kafka_lake.batches b
        GROUP BY b.source_id, b.topic, b.partition
    ),
    -- coordinates whose status changed after they landed: 'D' demoted,
    -- 'R' re-admitted, 'X' excluded (an accepted line), 'P' promoted (a
    -- duplicate line)
    marks AS (
        SELECT c.source_id, c.topic, c.partition,
               pg_catalog.sum(x.demoted) AS demoted,
               pg_catalog.sum(x.readmitted) AS readmitted,
               pg_catalog.sum(x.excluded) AS excluded,
               pg_catalog.sum(x.promoted) AS promoted,
               pg_catalog.sum(x.demoted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS demoted_24h,
               pg_catalog.sum(x.readmitted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS readmitted_24h,
               pg_catalog.sum(x.excluded) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS excluded_24h,
               pg_catalog.sum(x.promoted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS promoted_24h
        FROM kafka_lake.coordinates c
        JOIN kafka_lake.batches b ON b.source_id = c.source_id AND b.batch_id = c.batch_id
        CROSS JOIN LATERAL (
            SELECT pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'D', '')) AS demoted,
                   pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'R', '')) AS readmitted,
                   pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'X', '')) AS excluded,
                   pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'P', '')) AS promoted
        ) x
        WHERE c.statuses ~ '[DRXP]'
        GROUP BY c.source_id, c.topic, c.partition
    )
    SELECT s.source, coalesce(p.topic, s.topic) AS topic, p.partition,
           CASE WHEN e.failed_at > coalesce(ps.checked_at, '-infinity') THEN 'failed'
                ELSE ps.last_status END AS last_status,
           ps.checked_at AS last_call_at,
           l.last_batch_at,
           c.committed_offset,
           ps.low_watermark,
           ps.high_watermark,
           ps.high_watermark - coalesce(c.committed_offset, ps.low_watermark) AS lag,
           coalesce(l.batches, 0) AS batches,
           coalesce(l.bytes, 0) AS bytes_on_disk,
           coalesce(l.accepted, 0) - coalesce(m.demoted, 0) - coalesce(m.excluded, 0) + coalesce(m.promoted, 0) AS accepted,
           coalesce(l.duplicates, 0) + coalesce(m.demoted, 0) - coalesce(m.promoted, 0) AS duplicates,
           coalesce(l.quarantined, 0) - coalesce(m.readmitted, 0) AS quarantined,
           coalesce(l.accepted_24h, 0) - coalesce(m.demoted_24h, 0) - coalesce(m.excluded_24h, 0) + coalesce(m.promoted_24h, 0) AS accepted_24h,
           coalesce(l.duplicates_24h, 0) + coalesce(m.demoted_24h, 0) - coalesce(m.promoted_24h, 0) AS duplicates_24h,
           coalesce(l.quarantined_24h, 0) - coalesce(m.readmitted_24h, 0) AS quarantined_24h,
           (SELECT pg_catalog.min(d.business_date)
              FROM (SELECT b.min_business_date FROM kafka_lake.batches b
                     WHERE b.source_id = p.source_id AND b.topic = p.topic
                       AND b.partition = p.partition AND b.accepted_count > 0
                    UNION
                    SELECT b.max_business_date FROM kafka_lake.batches b
                     WHERE b.source_id = p.source_id AND b.topic = p.topic
                       AND b.partition = p.partition AND b.accepted_count > 0) AS d(business_date)
             WHERE d.business_date IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM kafka_lake.date_closings dc
                                WHERE dc.source_id = p.source_id
                                  AND dc.business_date = d.business_date
                                  AND dc.status = 'closed')) AS oldest_open_date,
           e.sqlstate AS last_error_sqlstate,
           e.message AS last_error,
           e.failed_at AS last_error_at,
           (SELECT pg_catalog.max(dc.business_date) FROM kafka_lake.date_closings dc
             WHERE dc.source_id = s.source_id AND dc.status <> 'superseded'
               AND dc.event_ids_pruned_at IS NOT NULL) AS event_ids_pruned_through
    FROM kafka_lake.sources s
    LEFT JOIN parts p ON p.source_id = s.source_id
    LEFT JOIN kafka_lake.partition_state ps
           ON ps.source_id = p.source_id AND ps.topic = p.topic AND ps.partition = p.partition
    LEFT JOIN landed l
           ON l.source_id = p.source_id AND l.topic = p.topic AND l.partition = p.partition
    LEFT JOIN marks m
           ON m.source_id = p.source_id AND m.topic = p.topic AND m.partition = p.partition
    LEFT JOIN LATERAL (
        SELECT pg_catalog.max(oc.committed_offset) AS committed_offset
          FROM kafka_lake.offset_commits oc
         WHERE oc.source_id = p.source_id AND oc.topic = p.topic AND oc.partition = p.partition
    ) c ON true
    LEFT JOIN LATERAL (
        SELECT x.sqlstate, x.message, x.failed_at FROM errors x
         WHERE x.source_id = s.source_id
           AND (x.partition IS NULL OR x.partition = p.partition)
         ORDER BY x.failed_at DESC LIMIT 1
    ) e ON true;
DROP FUNCTION kafka_lake.source_errors();
CREATE FUNCTION kafka_lake.source_errors(
    OUT source_id integer, OUT partition integer, OUT sqlstate text,
    OUT message text, OUT failed_at timestamptz, OUT topic_index integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_source_errors'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.source_errors() IS
  'The last error of a failed land() per source, topic and partition (answers only roles that may read kafka_lake.source_status)';
GRANT EXECUTE ON FUNCTION kafka_lake.source_errors() TO PUBLIC;
CREATE OR REPLACE VIEW kafka_lake.source_status AS
    WITH errors AS MATERIALIZED (SELECT * FROM kafka_lake.source_errors()),
    parts AS (
        SELECT source_id, topic, partition FROM kafka_lake.partition_state
        UNION
        SELECT DISTINCT source_id, topic, partition FROM kafka_lake.batches
    ),
    landed AS (
        SELECT b.source_id, b.topic, b.partition,
               pg_catalog.count(*) AS batches,
               pg_catalog.sum(CASE WHEN b.expired_at IS NULL
                                   THEN b.file_bytes[1] + b.file_bytes[2] + b.file_bytes[3]
                                   ELSE 0 END
                              + coalesce(b.manifest_bytes, 0)) AS bytes,
               pg_catalog.max(b.created_at) AS last_batch_at,
               pg_catalog.sum(b.accepted_count) AS accepted,
               pg_catalog.sum(b.duplicate_count) AS duplicates,
               pg_catalog.sum(b.quarantine_count) AS quarantined,
               pg_catalog.sum(b.accepted_count) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS accepted_24h,
               pg_catalog.sum(b.duplicate_count) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS duplicates_24h,
               pg_catalog.sum(b.quarantine_count) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS quarantined_24h
        FROM kafka_lake.batches b
        GROUP BY b.source_id, b.topic, b.partition
    ),
    -- coordinates whose status changed after they landed: 'D' demoted,
    -- 'R' re-admitted, 'X' excluded (an accepted line), 'P' promoted (a
    -- duplicate line)
    marks AS (
        SELECT c.source_id, c.topic, c.partition,
               pg_catalog.sum(x.demoted) AS demoted,
               pg_catalog.sum(x.readmitted) AS readmitted,
               pg_catalog.sum(x.excluded) AS excluded,
               pg_catalog.sum(x.promoted) AS promoted,
               pg_catalog.sum(x.demoted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS demoted_24h,
               pg_catalog.sum(x.readmitted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS readmitted_24h,
               pg_catalog.sum(x.excluded) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS excluded_24h,
               pg_catalog.sum(x.promoted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS promoted_24h
        FROM kafka_lake.coordinates c
        JOIN kafka_lake.batches b ON b.source_id = c.source_id AND b.batch_id = c.batch_id
        CROSS JOIN LATERAL (
            SELECT pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'D', '')) AS demoted,
                   pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'R', '')) AS readmitted,
                   pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'X', '')) AS excluded,
                   pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'P', '')) AS promoted
        ) x
        WHERE c.statuses ~ '[DRXP]'
        GROUP BY c.source_id, c.topic, c.partition
    )
    SELECT s.source, coalesce(p.topic, s.topic) AS topic, p.partition,
           CASE WHEN e.failed_at > coalesce(ps.checked_at, '-infinity') THEN 'failed'
                ELSE ps.last_status END AS last_status,
           ps.checked_at AS last_call_at,
           l.last_batch_at,
           c.committed_offset,
           ps.low_watermark,
           ps.high_watermark,
           ps.high_watermark - coalesce(c.committed_offset, ps.low_watermark) AS lag,
           coalesce(l.batches, 0) AS batches,
           coalesce(l.bytes, 0) AS bytes_on_disk,
           coalesce(l.accepted, 0) - coalesce(m.demoted, 0) - coalesce(m.excluded, 0) + coalesce(m.promoted, 0) AS accepted,
           coalesce(l.duplicates, 0) + coalesce(m.demoted, 0) - coalesce(m.promoted, 0) AS duplicates,
           coalesce(l.quarantined, 0) - coalesce(m.readmitted, 0) AS quarantined,
           coalesce(l.accepted_24h, 0) - coalesce(m.demoted_24h, 0) - coalesce(m.excluded_24h, 0) + coalesce(m.promoted_24h, 0) AS accepted_24h,
           coalesce(l.duplicates_24h, 0) + coalesce(m.demoted_24h, 0) - coalesce(m.promoted_24h, 0) AS duplicates_24h,
           coalesce(l.quarantined_24h, 0) - coalesce(m.readmitted_24h, 0) AS quarantined_24h,
           (SELECT pg_catalog.min(d.business_date)
              FROM (SELECT b.min_business_date FROM kafka_lake.batches b
                     WHERE b.source_id = p.source_id AND b.topic = p.topic
                       AND b.partition = p.partition AND b.accepted_count > 0
                    UNION
                    SELECT b.max_business_date FROM kafka_lake.batches b
                     WHERE b.source_id = p.source_id AND b.topic = p.topic
                       AND b.partition = p.partition AND b.accepted_count > 0) AS d(business_date)
             WHERE d.business_date IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM kafka_lake.date_closings dc
                                WHERE dc.source_id = p.source_id
                                  AND dc.business_date = d.business_date
                                  AND dc.status = 'closed')) AS oldest_open_date,
           e.sqlstate AS last_error_sqlstate,
           e.message AS last_error,
           e.failed_at AS last_error_at,
           (SELECT pg_catalog.max(dc.business_date) FROM kafka_lake.date_closings dc
             WHERE dc.source_id = s.source_id AND dc.status <> 'superseded'
               AND dc.event_ids_pruned_at IS NOT NULL) AS event_ids_pruned_through
    FROM kafka_lake.sources s
    LEFT JOIN parts p ON p.source_id = s.source_id
    LEFT JOIN kafka_lake.partition_state ps
           ON ps.source_id = p.source_id AND ps.topic = p.topic AND ps.partition = p.partition
    LEFT JOIN landed l
           ON l.source_id = p.source_id AND l.topic = p.topic AND l.partition = p.partition
    LEFT JOIN marks m
           ON m.source_id = p.source_id AND m.topic = p.topic AND m.partition = p.partition
    LEFT JOIN LATERAL (
        SELECT pg_catalog.max(oc.committed_offset) AS committed_offset
          FROM kafka_lake.offset_commits oc
         WHERE oc.source_id = p.source_id AND oc.topic = p.topic AND oc.partition = p.partition
    ) c ON true
    LEFT JOIN LATERAL (
        SELECT x.sqlstate, x.message, x.failed_at FROM errors x
         WHERE x.source_id = s.source_id
           AND (x.partition IS NULL
                OR (x.partition = p.partition
                    AND (pg_catalog.string_to_array(s.topic, ','))[x.topic_index + 1] = p.topic))
         ORDER BY x.failed_at DESC LIMIT 1
    ) e ON true;
