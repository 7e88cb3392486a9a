/* sql/kafka_lake--1.1--1.2.sql
 *
 * Upgrade of kafka_lake 1.1 to 1.2.  kafka_lake--1.0.sql and
 * kafka_lake--1.0--1.1.sql are released and never change: every catalog or
 * function change of 1.2 is made here, so that a database created at 1.0 or
 * 1.1 and one created at 1.2 end with the same objects (test/t/35_upgrade.sh
 * and test/t/96_upgrade_1_1.sh check the paths).  Everything landed and
 * bridged before stays readable, verifiable and bridgeable.
 *
 * Most of 1.2 is in the library (what a definition may name, who may gate a
 * source's publication, which names are reserved, the landing a restored
 * database may write); the sections below are what the catalog needs of it.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.2'" to load this file. \quit

--------------------------------------------------------------------------
-- source_status counts each record once
--
-- A record that readmit() re-admitted was counted twice: as quarantined (its
-- line in the batch it landed in) and as accepted or duplicate (its readmit
-- unit), so an alert on quarantined > 0 never cleared after a fix and a
-- readmit.  And a coordinate that recover() demoted (accepted on disk, a
-- duplicate for every reader) was counted as accepted.  The counts now
-- follow the status letters of the coordinates: a quarantined record that a
-- unit re-admitted ('R') counts where it is now, a demoted one ('D') as a
-- duplicate.  Only the rows that hold such a letter are read letter by
-- letter.  The _24h columns count by when a record landed (a re-admitted
-- record by its unit's time as accepted, by its batch's as no longer
-- quarantined).  The view keeps its columns.
--------------------------------------------------------------------------

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
    -- coordinates whose status changed after they landed: 'D' demoted, 'R' re-admitted
    marks AS (
        SELECT c.source_id, c.topic, c.partition,
               pg_catalog.sum(x.demoted) AS demoted,
               pg_catalog.sum(x.readmitted) AS readmitted,
               pg_catalog.sum(x.demoted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS demoted_24h,
               pg_catalog.sum(x.readmitted) FILTER (WHERE b.created_at > pg_catalog.now() - interval '24 hours') AS readmitted_24h
        FROM kafka_lake.coordinates c
        JOIN kafka_lake.batches b ON b.source_id = c.source_id AND b.batch_id = c.batch_id
        CROSS JOIN LATERAL (
            SELECT pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'D', '')) AS demoted,
                   pg_catalog.length(c.statuses) - pg_catalog.length(pg_catalog.replace(c.statuses, 'R', '')) AS readmitted
        ) x
        WHERE pg_catalog.strpos(c.statuses, 'D') > 0 OR pg_catalog.strpos(c.statuses, 'R') > 0
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
           coalesce(l.accepted, 0) - coalesce(m.demoted, 0) AS accepted,
           coalesce(l.duplicates, 0) + coalesce(m.demoted, 0) AS duplicates,
           coalesce(l.quarantined, 0) - coalesce(m.readmitted, 0) AS quarantined,
           coalesce(l.accepted_24h, 0) - coalesce(m.demoted_24h, 0) AS accepted_24h,
           coalesce(l.duplicates_24h, 0) + coalesce(m.demoted_24h, 0) AS duplicates_24h,
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
           e.failed_at AS last_error_at
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

--------------------------------------------------------------------------
-- A snapshot of another source is an error, not an empty answer
--
-- gold_as_of() reads the seed's gold: given a snapshot of a source whose
-- golds are others (an orders source), it returned no rows, as if the date
-- had none.  So did <gold>_as_of() given a snapshot of another source than
-- the gold's.  Both now refuse such a snapshot (22023) and name the
-- functions that read its golds (snapshot_gold_functions, which the
-- functions of the golds call for their hint).  The functions of the golds
-- defined before this version are made again (replace_gold_functions, a
-- helper of this script only), with their owner and grants.
--------------------------------------------------------------------------

CREATE FUNCTION kafka_lake.snapshot_gold_functions(snapshot_id bigint)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'The golds of snapshot ' || $1 || ' are read with '
           || coalesce(pg_catalog.string_agg(f, ', ' ORDER BY f), 'no function: it published none')
           || '; kafka_lake.snapshots lists the snapshots of every source.'
      FROM (SELECT 'kafka_lake.gold_as_of(' || $1 || ')' AS f
             WHERE EXISTS (SELECT 1 FROM kafka_lake.gold_daily_line_metrics g WHERE g.snapshot_id = $1)
            UNION ALL
            SELECT pg_catalog.format('kafka_lake.%I(%s)', g.gold || '_as_of', $1)
              FROM kafka_lake.golds g
              JOIN kafka_lake.snapshots s ON s.source_id = g.source_id
             WHERE s.snapshot_id = $1 AND NOT g.builtin) x
$$;
COMMENT ON FUNCTION kafka_lake.snapshot_gold_functions(bigint) IS
  'The functions that read the golds of a snapshot, as a sentence (the hint of gold_as_of and <gold>_as_of)';
REVOKE ALL ON FUNCTION kafka_lake.snapshot_gold_functions(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION kafka_lake.gold_as_of(snapshot_id bigint)
RETURNS TABLE (
    source            text,
    business_date     date,
    plant_id          text,
    line_id           text,
    product_code      text,
    units_produced    bigint,
    defect_count      bigint,
    defect_rate       numeric(12,6),
    avg_cycle_time_ms numeric(14,2),
    closing_status    text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    wanted ALIAS FOR $1;
    snapshot_source text;
BEGIN
    IF wanted IS NULL THEN
        RAISE EXCEPTION 'snapshot_id must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'kafka_lake.snapshots lists every snapshot; bridge() reports the one it publishes.';
    END IF;
    SELECT src.source INTO snapshot_source
      FROM kafka_lake.snapshots s JOIN kafka_lake.sources src ON src.source_id = s.source_id
     WHERE s.snapshot_id = wanted;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'snapshot % does not exist', wanted
            USING ERRCODE = 'no_data_found',
                  HINT = 'kafka_lake.snapshots lists every snapshot; bridge() reports the one it publishes.';
    END IF;
    -- every snapshot of a machine_event_v1 source holds rows of the seed's gold
    IF NOT EXISTS (SELECT 1 FROM kafka_lake.gold_daily_line_metrics g WHERE g.snapshot_id = wanted) THEN
        RAISE EXCEPTION 'snapshot % is of source "%", which does not publish gold_daily_line_metrics',
                        wanted, snapshot_source
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = kafka_lake.snapshot_gold_functions(wanted);
    END IF;
    RETURN QUERY
        SELECT src.source, g.business_date, g.plant_id, g.line_id,
               g.product_code, g.units_produced, g.defect_count, g.defect_rate,
               g.avg_cycle_time_ms, g.closing_status
        FROM kafka_lake.gold_daily_line_metrics g
        JOIN kafka_lake.snapshots s ON s.snapshot_id = g.snapshot_id
        JOIN kafka_lake.sources src ON src.source_id = s.source_id
        WHERE g.snapshot_id = wanted
        ORDER BY g.plant_id, g.line_id, g.product_code;
END
$$;

CREATE FUNCTION kafka_lake.replace_gold_functions()
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_replace_gold_functions'
LANGUAGE C;
SELECT kafka_lake.replace_gold_functions();
DROP FUNCTION kafka_lake.replace_gold_functions();

--------------------------------------------------------------------------
-- A restored database claims its landing
--
-- The catalog says where each source's files are, and pg_dump keeps it but
-- not the files: a database restored from a dump points at the original's
-- directories.  Every call that writes or removes a source's files now
-- refuses a directory whose marker names another database (55000), and
-- claim_landing() (superusers only: it names a directory of the server)
-- makes a landing this database's: the original's directory when the
-- restored database took the original's place, or a copy of it, with a
-- consumer group of the copy's own, when both go on (src/claim.c).
--------------------------------------------------------------------------

CREATE FUNCTION kafka_lake.claim_landing(
    source      text,
    landing_dir text DEFAULT NULL,
    group_id    text DEFAULT NULL,
    OUT source text, OUT directory text, OUT previous_marker text, OUT status text,
    OUT batches integer, OUT group_id text)
RETURNS record
AS 'MODULE_PATHNAME', 'kafka_lake_claim_landing'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.claim_landing(text, text, text) IS
  'Make a source''s landing (its directory, or a copy of it under landing_dir, with group_id) this database''s, after a restore from a dump';
REVOKE ALL ON FUNCTION kafka_lake.claim_landing(text, text, text) FROM PUBLIC;
