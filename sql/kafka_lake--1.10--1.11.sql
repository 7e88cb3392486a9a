/* sql/kafka_lake--1.10--1.11.sql
 *
 * Upgrade of kafka_lake 1.10 to 1.11.  The scripts up to 1.10 are released
 * and never change: every catalog or function change of 1.11 is made here, so
 * that a database created at an earlier version and one created at 1.11 end
 * with the same objects (test/t/99g_upgrade_1_11.sh checks the path).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.11'" to load this file. \quit

-- Partitions owned: a topic landed by several servers
--
-- A source may land only some partitions of its topics (the same numbers in
-- each topic), so that several PostgreSQL servers share a topic too big for
-- one, each owning a disjoint set.  NULL, the default and what every source
-- created before 1.11 has, is every partition.  land(), replay(), lag() and
-- close_date() work on the owned partitions only (src/source.c).
ALTER TABLE kafka_lake.sources ADD COLUMN partitions integer[]
    CONSTRAINT sources_partitions_check
    CHECK (partitions IS NULL
           OR (pg_catalog.array_ndims(partitions) = 1
               AND pg_catalog.cardinality(partitions) >= 1
               AND 0 <= ALL (partitions)
               AND pg_catalog.array_position(partitions, NULL) IS NULL));
COMMENT ON COLUMN kafka_lake.sources.partitions IS
  'The partitions of its topics this server lands, ascending; NULL: every partition';

CREATE FUNCTION kafka_lake.set_partitions(source text, partitions integer[])
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_set_partitions'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.set_partitions(text, integer[]) IS
  'Land only these partitions of the source''s topics from now on (NULL: every partition); what landed stays';
REVOKE ALL ON FUNCTION kafka_lake.set_partitions(text, integer[]) FROM PUBLIC;

-- create_source() gains partitions (default NULL: every partition), created
-- again with its grants (the same C function reads the sixth argument when
-- there is one).
DO $$
DECLARE
    grantees text[];
    grantee text;
BEGIN
    SELECT array_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                   ELSE pg_catalog.quote_ident(r.rolname) END)
      INTO grantees
      FROM pg_catalog.pg_proc p
     CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
      LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
     WHERE p.oid = 'kafka_lake.create_source(text, text, text, text, text)'::pg_catalog.regprocedure
       AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;

    DROP FUNCTION kafka_lake.create_source(text, text, text, text, text);
    CREATE FUNCTION kafka_lake.create_source(
        source     text,
        server     text,
        topic      text,
        group_id   text DEFAULT NULL,
        contract   text DEFAULT 'machine_event_v1',
        partitions integer[] DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'kafka_lake_create_source'
    LANGUAGE C;
    COMMENT ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]) IS
      'Record a source (a topic, or several, of a kafka_lake server; all its partitions, or those given) and create its foreign tables kafka_lake.<source>_records and <source>_events';
    REVOKE ALL ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]) FROM PUBLIC;

    FOREACH grantee IN ARRAY coalesce(grantees, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]) TO %s', grantee);
    END LOOP;
END
$$;

-- source_status gains owned: does this server land the partition now?  (A
-- partition given up keeps its row, owned false, with what landed of it.)
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
               AND dc.event_ids_pruned_at IS NOT NULL) AS event_ids_pruned_through,
           (s.partitions IS NULL OR p.partition = ANY (s.partitions)) AS owned
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
