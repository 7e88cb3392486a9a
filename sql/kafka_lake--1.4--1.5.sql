/* sql/kafka_lake--1.4--1.5.sql
 *
 * Upgrade of kafka_lake 1.4 to 1.5.  The scripts up to 1.4 are released and
 * never change: every catalog or function change of 1.5 is made here, so
 * that a database created at an earlier version and one created at 1.5 end
 * with the same objects (test/t/99_upgrade_1_5.sh checks the path).
 * Everything landed, bridged and closed before stays readable, verifiable
 * and bridgeable as it was: no source has a horizon until its owner sets one.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.5'" to load this file. \quit

-- event identity with a horizon
--
-- kafka_lake.accepted_events keeps each accepted event_id of a source for
-- good (I3: accepted at most once).  A source's owner may bound it: with a
-- dedupe_horizon, expire() removes the event_ids of batches whose business
-- dates are all older than the horizon and all closed, and marks those dates'
-- certificates (event_ids_pruned_at).  A redelivery of such an event is then
-- accepted again, as a late event of its closed date, and such a date is
-- never reopened or certified again: its published gold cannot change.
ALTER TABLE kafka_lake.sources ADD COLUMN dedupe_horizon interval
    CHECK (dedupe_horizon > interval '0');
COMMENT ON COLUMN kafka_lake.sources.dedupe_horizon IS
  'How long accepted event_ids are kept, by business date (NULL: for good); expire() removes older ones of closed dates';
ALTER TABLE kafka_lake.date_closings ADD COLUMN event_ids_pruned_at timestamptz;
COMMENT ON COLUMN kafka_lake.date_closings.event_ids_pruned_at IS
  'When expire() removed the date''s accepted event_ids (the source''s dedupe_horizon): the date is final';

CREATE FUNCTION kafka_lake.set_dedupe_horizon(source text, horizon interval)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_set_dedupe_horizon'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.set_dedupe_horizon(text, interval) IS
  'Keep a source''s accepted event_ids for this long, by business date (NULL: for good); expire() removes older ones of closed dates';
REVOKE ALL ON FUNCTION kafka_lake.set_dedupe_horizon(text, interval) FROM PUBLIC;

-- source_status says, per source, through which date event_ids have gone
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
           AND (x.partition IS NULL OR x.partition = p.partition)
         ORDER BY x.failed_at DESC LIMIT 1
    ) e ON true;
