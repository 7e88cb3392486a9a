/* sql/kafka_lake--1.2--1.3.sql
 *
 * Upgrade of kafka_lake 1.2 to 1.3.  The scripts of 1.0, 1.1 and 1.2 are
 * released and never change: every catalog or function change of 1.3 is
 * made here, so that a database created at 1.0, 1.1 or 1.2 and one created
 * at 1.3 end with the same objects (test/t/35_upgrade.sh,
 * test/t/92_upgrade_1_1.sh and test/t/93_upgrade_1_3.sh check the paths).
 * Everything landed and bridged before stays readable, verifiable and
 * bridgeable.
 *
 * 1.3 carries a topic's life through to gold: dates judged by several
 * versions of a contract and dates with re-admitted records bridge, silver
 * follows its contract, an accepted record can be set aside (exclude), and
 * golds and checks can be dropped, redefined and run again (recheck).  The
 * sections below are what the catalog needs of it, one per feature.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.3'" to load this file. \quit

--------------------------------------------------------------------------
-- golds and checks change
--
-- A gold or a check can be dropped (drop_gold, drop_check) and defined
-- again under its name (define_gold, add_check): each definition is a
-- version, kept in kafka_lake.gold_definitions / check_definitions with
-- when it was defined, by whom, and when and why it ended ('redefined',
-- 'dropped'); kafka_lake.golds and quality_checks keep the current one, with
-- its version.  Each snapshot records which version of each gold and check
-- made it (kafka_lake.snapshot_definitions; for the snapshots published
-- before this version, version 1 of the golds defined by then and of the
-- checks its run ran).  A dropped gold keeps its table, with the rows of
-- every snapshot it published, and its <gold>_as_of() function, which now
-- finds the gold's source in its history; so the functions of the golds
-- defined before are made again (replace_gold_functions, a helper of this
-- script only).  bridge() gains recheck (default false): a date whose
-- accepted events did not change runs the current golds and checks again,
-- and publishes only when their result differs (the run it replaces is
-- then 'superseded', so that an input has one processed run); C symbol
-- kafka_lake_bridge_1_3, the function is created again with its grants.
--------------------------------------------------------------------------

-- a run that a recheck replaced is 'superseded': one processed run per input
ALTER TABLE kafka_lake.runs
    DROP CONSTRAINT runs_status_check,
    ADD CONSTRAINT runs_status_check CHECK (status IN ('processed', 'failed_quality', 'superseded'));

ALTER TABLE kafka_lake.golds
    ADD COLUMN version integer NOT NULL DEFAULT 1 CHECK (version >= 1);
COMMENT ON COLUMN kafka_lake.golds.version IS
  'The current definition''s version (kafka_lake.gold_definitions has every version)';
ALTER TABLE kafka_lake.quality_checks
    ADD COLUMN version integer NOT NULL DEFAULT 1 CHECK (version >= 1);
COMMENT ON COLUMN kafka_lake.quality_checks.version IS
  'The current definition''s version (kafka_lake.check_definitions has every version)';

CREATE TABLE kafka_lake.gold_definitions (
    gold        text NOT NULL CHECK (gold ~ '^[a-z_][a-z0-9_]{0,47}$'),
    version     integer NOT NULL CHECK (version >= 1),
    -- NULL: the built-in gold of every machine_event_v1 source
    source_id   integer REFERENCES kafka_lake.sources ON DELETE CASCADE,
    grain       text[] NOT NULL,
    metrics     json,
    sql         text,
    owner       name NOT NULL,
    builtin     boolean NOT NULL DEFAULT false,
    defined_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    ended_by    text CHECK (ended_by IN ('redefined', 'dropped')),
    PRIMARY KEY (gold, version),
    CHECK ((metrics IS NULL) <> (sql IS NULL)),
    CHECK ((ended_at IS NULL) = (ended_by IS NULL)),
    CHECK (builtin = (source_id IS NULL))
);
COMMENT ON TABLE kafka_lake.gold_definitions IS
  'Every definition a gold has had, one version per define_gold(); ended_by says whether a later version or drop_gold() ended it';

CREATE TABLE kafka_lake.check_definitions (
    source_id   integer NOT NULL REFERENCES kafka_lake.sources ON DELETE CASCADE,
    check_name  text NOT NULL CHECK (check_name ~ '^[a-z_][a-z0-9_]{0,47}$'),
    version     integer NOT NULL CHECK (version >= 1),
    sql         text NOT NULL,
    owner       name NOT NULL,
    defined_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    ended_by    text CHECK (ended_by IN ('redefined', 'dropped')),
    PRIMARY KEY (source_id, check_name, version),
    CHECK ((ended_at IS NULL) = (ended_by IS NULL))
);
COMMENT ON TABLE kafka_lake.check_definitions IS
  'Every definition an owner''s check has had, one version per add_check(); ended_by says whether a later version or drop_check() ended it';

CREATE TABLE kafka_lake.snapshot_definitions (
    snapshot_id bigint NOT NULL REFERENCES kafka_lake.snapshots ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('gold', 'check')),
    name        text NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    PRIMARY KEY (snapshot_id, kind, name)
);
COMMENT ON TABLE kafka_lake.snapshot_definitions IS
  'The version of each gold and owner''s check that made a snapshot (kafka_lake.gold_definitions, check_definitions)';

INSERT INTO kafka_lake.gold_definitions (gold, version, source_id, grain, metrics, sql, owner,
                                         builtin, defined_at)
SELECT g.gold, 1, g.source_id, g.grain, g.metrics, g.sql, g.owner, g.builtin, g.created_at
  FROM kafka_lake.golds g;
INSERT INTO kafka_lake.check_definitions (source_id, check_name, version, sql, owner, defined_at)
SELECT c.source_id, c.check_name, 1, c.sql, c.owner, c.created_at
  FROM kafka_lake.quality_checks c;
INSERT INTO kafka_lake.snapshot_definitions (snapshot_id, kind, name, version)
SELECT s.snapshot_id, 'gold', g.gold, 1
  FROM kafka_lake.snapshots s
  JOIN kafka_lake.golds g
    ON (g.builtin AND EXISTS (SELECT 1 FROM kafka_lake.gold_daily_line_metrics m
                               WHERE m.snapshot_id = s.snapshot_id))
    OR (g.source_id = s.source_id AND g.created_at <= s.created_at)
UNION ALL
SELECT DISTINCT s.snapshot_id, 'check', c.check_name, 1
  FROM kafka_lake.snapshots s
  JOIN kafka_lake.quality_results q ON q.run_id = s.run_id
  JOIN kafka_lake.quality_checks c ON c.source_id = s.source_id AND c.check_name = q.check_name;

SELECT pg_catalog.pg_extension_config_dump('kafka_lake.gold_definitions', 'WHERE NOT builtin');
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.check_definitions', '');
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.snapshot_definitions', '');

-- the golds of a snapshot, from what made it (a dropped gold's too)
CREATE OR REPLACE FUNCTION kafka_lake.snapshot_gold_functions(snapshot_id bigint)
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
            SELECT pg_catalog.format('kafka_lake.%I(%s)', d.name || '_as_of', $1)
              FROM kafka_lake.snapshot_definitions d
             WHERE d.snapshot_id = $1 AND d.kind = 'gold' AND d.name <> 'gold_daily_line_metrics') x
$$;

CREATE FUNCTION kafka_lake.replace_gold_functions()
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_replace_gold_functions'
LANGUAGE C STRICT;
SELECT kafka_lake.replace_gold_functions();
DROP FUNCTION kafka_lake.replace_gold_functions();

CREATE FUNCTION kafka_lake.drop_gold(source text, gold text)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_drop_gold'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.drop_gold(text, text) IS
  'Drop a gold of a source: its definition, view <gold>_current and compute function; its table and <gold>_as_of keep the rows it published';
REVOKE ALL ON FUNCTION kafka_lake.drop_gold(text, text) FROM PUBLIC;

CREATE FUNCTION kafka_lake.drop_check(source text, check_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_drop_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.drop_check(text, text) IS
  'Drop an owner''s quality check of a source: its definition and its function; later bridges no longer run it';
REVOKE ALL ON FUNCTION kafka_lake.drop_check(text, text) FROM PUBLIC;

COMMENT ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) IS
  'Define a gold of a source, or define it again (a new version, from the next snapshot on): the table kafka_lake.<gold>, its view <gold>_current and function <gold>_as_of, published by every bridge() of the source';
COMMENT ON FUNCTION kafka_lake.add_check(text, text, text) IS
  'Add a quality check to every bridge() of a source, or define it again (a new version): a query over silver whose rows are violations';

-- whoever may define may drop; bridge() is created again with its grants
DO $$
DECLARE
    grantee text;
BEGIN
    FOR grantee IN
        SELECT DISTINCT pg_catalog.quote_ident(r.rolname)
          FROM pg_catalog.pg_proc p
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
          JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
         WHERE p.oid = 'kafka_lake.define_gold(text, text, text[], json, text)'::pg_catalog.regprocedure
           AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.drop_gold(text, text) TO %s', grantee);
    END LOOP;
    FOR grantee IN
        SELECT DISTINCT pg_catalog.quote_ident(r.rolname)
          FROM pg_catalog.pg_proc p
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
          JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
         WHERE p.oid = 'kafka_lake.add_check(text, text, text)'::pg_catalog.regprocedure
           AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.drop_check(text, text) TO %s', grantee);
    END LOOP;
END
$$;

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
     WHERE p.oid = 'kafka_lake.bridge(text, date, boolean)'::pg_catalog.regprocedure
       AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;

    DROP FUNCTION kafka_lake.bridge(text, date, boolean);
    CREATE FUNCTION kafka_lake.bridge(
        source        text,
        business_date date,
        reopen        boolean DEFAULT false,
        recheck       boolean DEFAULT false,
        OUT business_date   date,
        OUT source_hash     text,
        OUT selected_events integer,
        OUT adapter_status  text,
        OUT run_id          text,
        OUT run_status      text,
        OUT quality_passed  integer,
        OUT quality_total   integer,
        OUT silver_rows     integer,
        OUT gold_rows       integer,
        OUT snapshot_id     bigint,
        OUT snapshot_status text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'kafka_lake_bridge_1_3'
    LANGUAGE C VOLATILE;
    COMMENT ON FUNCTION kafka_lake.bridge(text, date, boolean, boolean) IS
      'Bridge one business date: canonical CSV (source_hash), silver, the quality checks, and a new snapshot of every gold of the source when they pass; recheck => true runs the current golds and checks again over an unchanged date; a closed date changes only with reopen => true';
    REVOKE ALL ON FUNCTION kafka_lake.bridge(text, date, boolean, boolean) FROM PUBLIC;
    FOREACH grantee IN ARRAY coalesce(grantees, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.bridge(text, date, boolean, boolean) TO %s', grantee);
    END LOOP;
END
$$;

--------------------------------------------------------------------------
-- exclusions
--
-- A landed record never changes, so one wrong accepted record (an order
-- whose total fails its owner's check) blocked its date, and a corrected
-- re-send landed as duplicate_event_id.  exclude() sets an accepted record
-- aside, unexclude() puts it back; each call writes an exclusion unit
-- (<source>/exclusions/exclusion=<seq>-<hash12>/exclusion.json, fsynced
-- and renamed into place, never changed) and records it here.  Two status
-- letters of kafka_lake.coordinates say what it changed: 'X' an accepted
-- line set aside (the foreign tables read it as status 'excluded', its
-- reason in validation_error), 'P' a duplicate line accepted since its
-- event_id's accepted record was set aside (the earliest such duplicate by
-- (partition, offset) whose batch has not expired).  accepted_events
-- follows: it holds the event_id at the promoted record, or no more (a
-- record landing later with it is accepted).  kafka_lake.exclusions is the
-- audit (who, when, why, what changed), one row per unit, never updated:
-- an unexclude row names the exclusion it undoes.  coordinate_list and
-- source_status read the new letters.  Who may readmit may exclude: the
-- functions are granted to the roles that hold EXECUTE on readmit().
--------------------------------------------------------------------------

DO $$
DECLARE
    c name;
BEGIN
    FOR c IN SELECT conname FROM pg_catalog.pg_constraint
              WHERE conrelid = 'kafka_lake.coordinates'::pg_catalog.regclass AND contype = 'c'
                AND pg_catalog.pg_get_constraintdef(oid) LIKE '%statuses ~%'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kafka_lake.coordinates DROP CONSTRAINT %I', c);
    END LOOP;
END
$$;
ALTER TABLE kafka_lake.coordinates
    ADD CHECK (statuses ~ '^[adqDRXP]+$');

CREATE TABLE kafka_lake.exclusions (
    source_id            integer NOT NULL REFERENCES kafka_lake.sources ON DELETE CASCADE,
    exclusion_id         text NOT NULL CHECK (exclusion_id ~ '^[0-9]{20}-[0-9a-f]{12}$'),
    seq                  bigint NOT NULL CHECK (seq >= 1),
    kind                 text NOT NULL CHECK (kind IN ('exclude', 'unexclude')),
    topic                text NOT NULL,
    event_id             text,
    partition            integer NOT NULL,
    "offset"             bigint NOT NULL,
    batch_id             text NOT NULL,
    letters              text NOT NULL CHECK (letters ~ '^[adDXP]{2}$'),
    fingerprint          bytea NOT NULL,
    promoted_partition   integer,
    promoted_offset      bigint,
    promoted_batch_id    text,
    promoted_letters     text CHECK (promoted_letters IN ('dP', 'Pd')),
    promoted_fingerprint bytea,
    undoes               text,
    reason               text NOT NULL CHECK (pg_catalog.btrim(reason) <> ''),
    created_by           name NOT NULL,
    created_at           timestamptz NOT NULL,
    manifest_sha256      text NOT NULL,
    manifest_bytes       bigint NOT NULL,
    landed_by            text NOT NULL CHECK (landed_by IN ('exclude', 'unexclude', 'recover')),
    PRIMARY KEY (source_id, seq),
    UNIQUE (source_id, exclusion_id),
    CHECK ((kind = 'unexclude') = (undoes IS NOT NULL)),
    CHECK ((promoted_partition IS NULL) = (promoted_letters IS NULL))
);
COMMENT ON TABLE kafka_lake.exclusions IS
  'One row per exclusion unit: exclude() set a record aside (letters aX, or Pd for a promoted one) and maybe promoted a duplicate (dP); unexclude() undid exclusion undoes; who, when and why';
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.exclusions', '');

-- the exclusions in effect: not undone
CREATE VIEW kafka_lake.excluded_records AS
SELECT s.source, e.exclusion_id, e.topic, e.partition, e."offset", e.batch_id, e.event_id,
       e.promoted_partition, e.promoted_offset, e.promoted_batch_id,
       e.reason, e.created_by, e.created_at
FROM kafka_lake.exclusions e
JOIN kafka_lake.sources s USING (source_id)
WHERE e.kind = 'exclude'
  AND NOT EXISTS (SELECT 1 FROM kafka_lake.exclusions u
                   WHERE u.source_id = e.source_id AND u.undoes = e.exclusion_id);
COMMENT ON VIEW kafka_lake.excluded_records IS
  'The exclusions in effect, with the duplicate promoted in each one''s place';

-- one row per landed coordinate, with the status it has now
CREATE OR REPLACE VIEW kafka_lake.coordinate_list AS
SELECT s.source, c.topic, c.partition,
       coalesce(c.offset_list[i], lower(c.offsets) + i - 1) AS "offset",
       CASE substr(c.statuses, i, 1)
            WHEN 'a' THEN 'accepted' WHEN 'P' THEN 'accepted' WHEN 'q' THEN 'quarantined'
            WHEN 'X' THEN 'excluded'
            ELSE 'duplicate_event_id' END AS status,
       encode(substring(c.fingerprints FROM (i - 1) * 32 + 1 FOR 32), 'hex') AS fingerprint,
       c.batch_id
FROM kafka_lake.coordinates c
JOIN kafka_lake.sources s USING (source_id)
CROSS JOIN LATERAL generate_series(1, length(c.statuses)) AS i
WHERE substr(c.statuses, i, 1) <> 'R';

-- source_status counts an excluded record neither accepted nor duplicate,
-- a promoted one as accepted
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

CREATE FUNCTION kafka_lake.exclude(
    source      text,
    event_id    text DEFAULT NULL,
    "partition" integer DEFAULT NULL,
    "offset"    bigint DEFAULT NULL,
    reason      text DEFAULT NULL,
    OUT exclusion_id text, OUT action text, OUT topic text, OUT "partition" integer,
    OUT "offset" bigint, OUT batch_id text, OUT event_id text, OUT status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_exclude'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.exclude(text, text, integer, bigint, text) IS
  'Set an accepted record aside (by event_id, or by partition and offset; a reason is required); its event_id''s earliest duplicate is accepted in its place';

CREATE FUNCTION kafka_lake.unexclude(
    source      text,
    event_id    text DEFAULT NULL,
    "partition" integer DEFAULT NULL,
    "offset"    bigint DEFAULT NULL,
    reason      text DEFAULT NULL,
    OUT exclusion_id text, OUT action text, OUT topic text, OUT "partition" integer,
    OUT "offset" bigint, OUT batch_id text, OUT event_id text, OUT status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_unexclude'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.unexclude(text, text, integer, bigint, text) IS
  'Undo an exclusion in effect: the record is accepted again, the duplicate promoted in its place a duplicate again';

REVOKE ALL ON FUNCTION kafka_lake.exclude(text, text, integer, bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka_lake.unexclude(text, text, integer, bigint, text) FROM PUBLIC;
-- who may readmit may exclude
DO $$
DECLARE
    grantee text;
BEGIN
    FOR grantee IN
        SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                             ELSE pg_catalog.quote_ident(r.rolname) END
          FROM pg_catalog.pg_proc p
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
          LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
         WHERE p.oid = 'kafka_lake.readmit(text, integer, bigint, bigint)'::pg_catalog.regprocedure
           AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.exclude(text, text, integer, bigint, text) TO %s', grantee);
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.unexclude(text, text, integer, bigint, text) TO %s', grantee);
    END LOOP;
END
$$;

--------------------------------------------------------------------------
-- avro
--
-- avro_decode() decodes one Avro datum (the bytes after any framing) with
-- its writer's schema into JSON, the datum of the reader's schema when one
-- is given (Avro schema resolution: fields by name and alias, defaults,
-- promotions, enum defaults, unions), the writer's otherwise.  A NULL value
-- or writer schema gives NULL; a NULL reader schema means the writer's, so
-- the function is not STRICT.  avro_frame() splits a Kafka value in
-- Confluent's wire format (magic byte 0 and a 4-byte schema id, or magic
-- byte 1 and a 16-byte schema GUID) into the id and the datum; any other
-- first byte is an error, never taken for an unframed datum.  Both read
-- nothing of the database: granted to PUBLIC.  docs/contracts.md, "Avro",
-- has the type mapping.
--------------------------------------------------------------------------

CREATE FUNCTION kafka_lake.avro_decode(value bytea, writer_schema json, reader_schema json DEFAULT NULL)
RETURNS json
AS 'MODULE_PATHNAME', 'kafka_lake_avro_decode'
LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION kafka_lake.avro_decode(bytea, json, json) IS
  'Decode one Avro datum (no framing) written with writer_schema into JSON, as reader_schema reads it (default: the writer''s)';

CREATE FUNCTION kafka_lake.avro_frame(value bytea, OUT schema_id bigint, OUT schema_guid uuid, OUT payload bytea)
RETURNS record
AS 'MODULE_PATHNAME', 'kafka_lake_avro_frame'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kafka_lake.avro_frame(bytea) IS
  'Split a Kafka value in Confluent''s wire format into its schema id (magic byte 0) or schema GUID (magic byte 1) and its Avro datum';

GRANT EXECUTE ON FUNCTION kafka_lake.avro_decode(bytea, json, json) TO PUBLIC;
GRANT EXECUTE ON FUNCTION kafka_lake.avro_frame(bytea) TO PUBLIC;

--------------------------------------------------------------------------
-- schema registry
--
-- A server may name a Confluent Schema Registry (its options
-- "schema.registry.url", "schema.registry.basic.auth.user.info" in a user
-- mapping, "schema.registry.ssl.ca.location": options.c).  A schema fetched
-- from it is kept here for good, under the registry's identity (the server's
-- name and the URL), with its SHA-256: a schema id's text never changes on a
-- registry, so an id is served from this table once stored, the registry
-- down or not, and a registry that answers another text for it is an error.
-- subject and version are those the schema was first seen under, when it was
-- fetched by subject (an id may be registered under several).  The table
-- goes with pg_dump; nothing of it is granted to PUBLIC.
CREATE TABLE kafka_lake.schemas (
    server       text        NOT NULL,
    registry_url text        NOT NULL,
    schema_id    integer     NOT NULL CHECK (schema_id >= 0),
    subject      text,
    version      integer     CHECK (version > 0),
    schema_type  text        NOT NULL DEFAULT 'AVRO'
                             CHECK (schema_type IN ('AVRO', 'JSON', 'PROTOBUF')),
    schema       text        NOT NULL,
    sha256       bytea       NOT NULL CHECK (pg_catalog.length(sha256) = 32),
    fetched_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (server, registry_url, schema_id),
    CHECK ((subject IS NULL) = (version IS NULL))
);
CREATE INDEX schemas_subject ON kafka_lake.schemas (server, registry_url, subject, version);
COMMENT ON TABLE kafka_lake.schemas IS
  'Schemas fetched from the servers'' schema registries, kept for good (a schema id never changes)';
REVOKE ALL ON TABLE kafka_lake.schemas FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.schemas', '');

CREATE FUNCTION kafka_lake.registry_schema(
    server    text,
    schema_id integer,
    timeout   interval DEFAULT NULL,
    OUT schema_id integer, OUT subject text, OUT version integer,
    OUT schema_type text, OUT schema json)
RETURNS record
AS 'MODULE_PATHNAME', 'kafka_lake_registry_schema'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.registry_schema(text, integer, interval) IS
  'A schema of the server''s schema registry by id: from kafka_lake.schemas, else fetched and stored';

CREATE FUNCTION kafka_lake.registry_subject(
    server  text,
    subject text,
    version integer DEFAULT NULL,
    timeout interval DEFAULT NULL,
    OUT schema_id integer, OUT subject text, OUT version integer,
    OUT schema_type text, OUT schema json)
RETURNS record
AS 'MODULE_PATHNAME', 'kafka_lake_registry_subject'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.registry_subject(text, text, integer, interval) IS
  'A version of a subject of the server''s schema registry (NULL: the latest), its schema stored in kafka_lake.schemas';

REVOKE ALL ON FUNCTION kafka_lake.registry_schema(text, integer, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka_lake.registry_subject(text, text, integer, interval) FROM PUBLIC;

-- avro contracts
--
-- create_contract() accepts {"format": "avro", "schema": <a record schema>}
-- and {"format": "avro", "server": ..., "subject": ..., "version": ...},
-- whose subject's schema it fetches from the server's registry and stores
-- embedded: the C function that can reach the registry is another one.

CREATE OR REPLACE FUNCTION kafka_lake.create_contract(contract text, definition json)
RETURNS integer
AS 'MODULE_PATHNAME', 'kafka_lake_create_contract_1_3'
LANGUAGE C VOLATILE;
