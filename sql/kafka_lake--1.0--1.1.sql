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

--------------------------------------------------------------------------
-- Durability (landing operations and errors): a NULL argument is an error
--
-- recover(), verify() and gold_as_of() were STRICT, so a NULL argument gave
-- no rows, and an empty verify() reads as "no problem found".  Every
-- function now refuses a NULL where it needs a value with 22004 and a hint
-- (the C functions check their arguments themselves).  event_key() also
-- refuses an unknown source (42704) instead of returning NULL.  Nothing
-- else of the catalog changes: sources keep the consumer group ids they
-- were created with (the default for new sources, kafka_lake.<database>.
-- <source>, is decided by create_source and stored).
--------------------------------------------------------------------------

ALTER FUNCTION kafka_lake.recover(text) CALLED ON NULL INPUT;
ALTER FUNCTION kafka_lake.verify(text) CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION kafka_lake.event_key(source text, event_id text)
RETURNS uuid
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key uuid;
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN $1 IS NULL THEN 'source' ELSE 'event_id' END
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'For example: kafka_lake.event_key(''machine_events'', ''evt-20260629-000001'').';
    END IF;
    SELECT encode(substring(sha256(int4send(s.source_id) || convert_to($2, 'UTF8'))
                            FROM 1 FOR 16), 'hex')::uuid
      INTO key
      FROM kafka_lake.sources s WHERE s.source = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'source "%" does not exist', $1
            USING ERRCODE = 'undefined_object',
                  HINT = 'The existing sources are listed in kafka_lake.sources.';
    END IF;
    RETURN key;
END
$$;

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
BEGIN
    IF wanted IS NULL THEN
        RAISE EXCEPTION 'snapshot_id must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'kafka_lake.snapshots lists every snapshot; bridge() reports the one it publishes.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM kafka_lake.snapshots s WHERE s.snapshot_id = wanted) THEN
        RAISE EXCEPTION 'snapshot % does not exist', wanted
            USING ERRCODE = 'no_data_found',
                  HINT = 'kafka_lake.snapshots lists every snapshot; bridge() reports the one it publishes.';
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

--------------------------------------------------------------------------
-- Durability (drop, recovery): a batch records the size and CRC-32C of its
-- manifest.json, so that the foreign table and the bridge check a batch's
-- manifest as cheaply as its data files before they use it (batches landed
-- by 1.0 are checked by manifest_sha256); verify() says what to do about
-- each problem it reports (column action) and refuses a NULL source; and
-- accepted_events rows of sources that no longer exist, which a
-- drop_source() running while a land() of the source was open could leave
-- behind in 1.0, are removed.
--------------------------------------------------------------------------

ALTER TABLE kafka_lake.batches
    ADD COLUMN manifest_bytes  bigint CHECK (manifest_bytes >= 0),
    ADD COLUMN manifest_crc32c bigint CHECK (manifest_crc32c BETWEEN 0 AND 4294967295);
COMMENT ON COLUMN kafka_lake.batches.manifest_bytes IS
  'Size of the batch''s manifest.json when it landed (NULL: landed by 1.0, checked by manifest_sha256)';
COMMENT ON COLUMN kafka_lake.batches.manifest_crc32c IS
  'CRC-32C of the batch''s manifest.json when it landed (NULL: landed by 1.0)';

DELETE FROM kafka_lake.accepted_events a
 WHERE NOT EXISTS (SELECT 1 FROM kafka_lake.sources s WHERE s.source_id = a.source_id);

-- verify() gains a column, so it is created again (C symbol
-- kafka_lake_verify_1_1; kafka_lake_verify keeps its 1.0 meaning for
-- databases not yet updated), and whoever could EXECUTE it still can.
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
     WHERE p.oid = 'kafka_lake.verify(text)'::pg_catalog.regprocedure
       AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;

    DROP FUNCTION kafka_lake.verify(text);
    CREATE FUNCTION kafka_lake.verify(
        source text,
        OUT batch_id text, OUT topic text, OUT partition integer,
        OUT file text, OUT problem text, OUT detail text, OUT action text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'kafka_lake_verify_1_1'
    LANGUAGE C;
    COMMENT ON FUNCTION kafka_lake.verify(text) IS
      'Re-read every batch of a source and check it against its manifest and the catalog; one row per problem, with what to do';
    REVOKE ALL ON FUNCTION kafka_lake.verify(text) FROM PUBLIC;
    FOREACH grantee IN ARRAY coalesce(grantees, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.verify(text) TO %s', grantee);
    END LOOP;
END
$$;

--------------------------------------------------------------------------
-- Contracts as data: any JSON topic lands with a contract its owner writes
--
-- A contract is a row of kafka_lake.contracts, (contract, version), whose
-- definition (json: the order of its properties is the order of its checks
-- and of the typed table's columns, which jsonb would not keep) never
-- changes once stored; create_contract() checks a definition and stores it
-- as the next version.  The built-ins machine_event_v1, json_object and raw
-- are stored from the library's own text (kafka_lake_builtin_contracts), so
-- the catalog and the code cannot disagree; pg_dump keeps the others.
-- A source pins (contract, contract_version); 1.0's CHECK that allowed
-- machine_event_v1 only goes.  Each batch records the contract that judged
-- it (1.0's batches: machine_event_v1 version 1) and its kind: a landing,
-- or a readmit unit (readmit(): quarantined records re-judged from the
-- landing, written as a new unit; their original coordinates get the
-- status letter 'R', and the unit's own coordinates row is outside the
-- exclusion constraint, since they are the same offsets again).  The
-- foreign tables <source>_records gain headers, contract and
-- contract_version; every source gets its typed table <source>_events
-- (created here for the sources that exist, then by create_source(); like
-- <source>_records it is no member of the extension).
--------------------------------------------------------------------------

CREATE TABLE kafka_lake.contracts (
    contract    text NOT NULL CHECK (contract ~ '^[a-z_][a-z0-9_]{0,62}$'),
    version     integer NOT NULL CHECK (version >= 1),
    definition  json NOT NULL,
    builtin     boolean NOT NULL DEFAULT false,
    created_by  name NOT NULL DEFAULT current_user,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (contract, version)
);
COMMENT ON TABLE kafka_lake.contracts IS
  'Contracts as data: one row per (contract, version), never updated; create_contract() adds versions';

CREATE FUNCTION kafka_lake.builtin_contracts(
    OUT contract text, OUT version integer, OUT definition json)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_builtin_contracts'
LANGUAGE C STRICT;
INSERT INTO kafka_lake.contracts (contract, version, definition, builtin, created_by)
SELECT contract, version, definition, true, 'kafka_lake'
  FROM kafka_lake.builtin_contracts();
DROP FUNCTION kafka_lake.builtin_contracts();

SELECT pg_catalog.pg_extension_config_dump('kafka_lake.contracts', 'WHERE NOT builtin');

-- sources pin a contract version (1.0's CHECK allowed machine_event_v1 only)
DO $$
DECLARE
    c name;
BEGIN
    FOR c IN SELECT conname FROM pg_catalog.pg_constraint
              WHERE conrelid = 'kafka_lake.sources'::pg_catalog.regclass AND contype = 'c'
                AND pg_catalog.pg_get_constraintdef(oid) LIKE '%machine_event_v1%'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kafka_lake.sources DROP CONSTRAINT %I', c);
    END LOOP;
END
$$;
ALTER TABLE kafka_lake.sources
    ADD COLUMN contract_version integer NOT NULL DEFAULT 1;
ALTER TABLE kafka_lake.sources ALTER COLUMN contract_version DROP DEFAULT;
ALTER TABLE kafka_lake.sources
    ADD FOREIGN KEY (contract, contract_version) REFERENCES kafka_lake.contracts (contract, version);
COMMENT ON COLUMN kafka_lake.sources.contract_version IS
  'The version of the contract new landings are judged by (alter_source() moves it)';

-- each batch records what judged it, and whether it is a readmit unit
ALTER TABLE kafka_lake.batches
    ADD COLUMN contract text,
    ADD COLUMN contract_version integer,
    ADD COLUMN kind text NOT NULL DEFAULT 'landing' CHECK (kind IN ('landing', 'readmit')),
    ADD COLUMN readmit_of text;
UPDATE kafka_lake.batches SET contract = 'machine_event_v1', contract_version = 1;
ALTER TABLE kafka_lake.batches
    ALTER COLUMN contract SET NOT NULL,
    ALTER COLUMN contract_version SET NOT NULL,
    ADD CHECK ((kind = 'readmit') = (readmit_of IS NOT NULL));
COMMENT ON COLUMN kafka_lake.batches.contract IS
  'The contract (and contract_version) that judged the batch''s records';
COMMENT ON COLUMN kafka_lake.batches.kind IS
  'landing: records as they came; readmit: quarantined records of batch readmit_of re-judged by readmit()';
DO $$
DECLARE
    c name;
BEGIN
    FOR c IN SELECT conname FROM pg_catalog.pg_constraint
              WHERE conrelid = 'kafka_lake.batches'::pg_catalog.regclass AND contype = 'c'
                AND pg_catalog.pg_get_constraintdef(oid) LIKE '%landed_by%'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kafka_lake.batches DROP CONSTRAINT %I', c);
    END LOOP;
END
$$;
ALTER TABLE kafka_lake.batches
    ADD CHECK (landed_by IN ('land', 'replay', 'recover', 'readmit'));

-- a readmit unit's coordinates are those of its batch again: outside the
-- exclusion constraint; 'R' marks an original coordinate a unit re-admitted
ALTER TABLE kafka_lake.coordinates
    ADD COLUMN readmit boolean NOT NULL DEFAULT false;
DO $$
DECLARE
    c name;
BEGIN
    FOR c IN SELECT conname FROM pg_catalog.pg_constraint
              WHERE conrelid = 'kafka_lake.coordinates'::pg_catalog.regclass
                AND (contype = 'x' OR (contype = 'c' AND pg_catalog.pg_get_constraintdef(oid) LIKE '%statuses ~%'))
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kafka_lake.coordinates DROP CONSTRAINT %I', c);
    END LOOP;
END
$$;
ALTER TABLE kafka_lake.coordinates
    ADD CHECK (statuses ~ '^[adqDR]+$'),
    ADD EXCLUDE USING gist (source_id WITH =, topic WITH =, partition WITH =, offsets WITH &&)
        WHERE (NOT readmit);
COMMENT ON COLUMN kafka_lake.coordinates.readmit IS
  'The coordinates of a readmit unit (they repeat those of its batch, whose letters are R)';

-- one row per landed coordinate, with the status it has now
CREATE OR REPLACE VIEW kafka_lake.coordinate_list AS
SELECT s.source, c.topic, c.partition,
       coalesce(c.offset_list[i], lower(c.offsets) + i - 1) AS "offset",
       CASE substr(c.statuses, i, 1)
            WHEN 'a' THEN 'accepted' WHEN 'q' THEN 'quarantined'
            ELSE 'duplicate_event_id' END AS status,
       encode(substring(c.fingerprints FROM (i - 1) * 32 + 1 FOR 32), 'hex') AS fingerprint,
       c.batch_id
FROM kafka_lake.coordinates c
JOIN kafka_lake.sources s USING (source_id)
CROSS JOIN LATERAL generate_series(1, length(c.statuses)) AS i
WHERE substr(c.statuses, i, 1) <> 'R';

-- the foreign tables of existing sources: new columns, and the typed table
CREATE FUNCTION kafka_lake.create_events_table(source text)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_create_events_table'
LANGUAGE C STRICT;
DO $$
DECLARE
    s text;
BEGIN
    FOR s IN SELECT source FROM kafka_lake.sources ORDER BY source LOOP
        IF pg_catalog.to_regclass(pg_catalog.format('kafka_lake.%I', s || '_records')) IS NOT NULL THEN
            EXECUTE pg_catalog.format('ALTER FOREIGN TABLE kafka_lake.%I'
                ' ADD COLUMN IF NOT EXISTS headers jsonb,'
                ' ADD COLUMN IF NOT EXISTS contract text,'
                ' ADD COLUMN IF NOT EXISTS contract_version integer', s || '_records');
        END IF;
        IF pg_catalog.to_regclass(pg_catalog.format('kafka_lake.%I', s || '_events')) IS NULL THEN
            PERFORM kafka_lake.create_events_table(s);
            -- like <source>_records, a source's table is no member of the extension
            EXECUTE pg_catalog.format('ALTER EXTENSION kafka_lake DROP FOREIGN TABLE kafka_lake.%I',
                                      s || '_events');
        END IF;
    END LOOP;
END
$$;
DROP FUNCTION kafka_lake.create_events_table(text);

CREATE FUNCTION kafka_lake.create_contract(contract text, definition json)
RETURNS integer
AS 'MODULE_PATHNAME', 'kafka_lake_create_contract'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.create_contract(text, json) IS
  'Check a contract definition and store it: version 1 of a new name, the same version for the same definition, the next one otherwise';

CREATE FUNCTION kafka_lake.alter_source(
    source           text,
    contract         text,
    contract_version integer DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_alter_source'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.alter_source(text, text, integer) IS
  'Land a source with another contract (or version) from now on; its typed table kafka_lake.<source>_events follows';

REVOKE ALL ON FUNCTION kafka_lake.create_contract(text, json) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka_lake.alter_source(text, text, integer) FROM PUBLIC;

CREATE FUNCTION kafka_lake.readmit(
    source      text,
    partition   integer DEFAULT NULL,
    from_offset bigint DEFAULT NULL,
    to_offset   bigint DEFAULT NULL,
    OUT topic text, OUT partition integer, OUT batch_id text, OUT readmit_of text,
    OUT status text, OUT records integer, OUT accepted integer, OUT duplicates integer,
    OUT quarantined integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_readmit'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.readmit(text, integer, bigint, bigint) IS
  'Judge quarantined records again, from the landing, with the source''s current contract; the accepted ones land as readmit units';
REVOKE ALL ON FUNCTION kafka_lake.readmit(text, integer, bigint, bigint) FROM PUBLIC;

--------------------------------------------------------------------------
-- Closing a business date: a completeness certificate per date
-- (close_date), late data made visible (late_events, bridge(..., reopen)),
-- and the state of every source at a glance (source_status)
--
-- Gold was published 'provisional' and nothing ever closed it.
-- close_date() lands every partition up to marks (the high watermarks at
-- the call, or the offsets of a cutoff time), bridges the date below them
-- and records a certificate: date_closings (one row per close, the one in
-- effect not superseded) and date_closing_partitions (per partition the
-- offset and record timestamp through which the date is complete).  A
-- snapshot carries its closing status (closing_status: provisional, closed,
-- reopened), as its gold rows do; the 1.0 CHECK on the gold rows is
-- widened to 'reopened'.  Gold rows never change once written: closing a
-- date as it is publishes a copy of its gold as a new snapshot.
--
-- bridge() gains reopen (default false), so it is created again (C symbol
-- kafka_lake_bridge_1_1; kafka_lake_bridge keeps its 1.0 meaning for
-- databases not yet updated), and whoever could EXECUTE it still can.
--
-- partition_state holds what the last land() read of each partition
-- (watermarks, the status of its last row); source_status combines it with
-- the batches, commits and certificates, and the last error of a failed
-- land() kept in shared memory (source_errors()).  The functions behind
-- the two views check that their caller may read the view, so that SELECT
-- on the view is the one grant a reader needs (as pg_stat_statements'
-- function does); the views, like the catalog, are not readable by PUBLIC.
--------------------------------------------------------------------------

ALTER TABLE kafka_lake.snapshots
    ADD COLUMN closing_status text NOT NULL DEFAULT 'provisional'
        CHECK (closing_status IN ('provisional', 'closed', 'reopened'));
COMMENT ON COLUMN kafka_lake.snapshots.closing_status IS
  'provisional until close_date() certifies the date; closed; reopened: a correction published after a close';
ALTER TABLE kafka_lake.gold_daily_line_metrics
    DROP CONSTRAINT gold_daily_line_metrics_closing_status_check,
    ADD CONSTRAINT gold_daily_line_metrics_closing_status_check
        CHECK (closing_status IN ('provisional', 'closed', 'reopened'));

CREATE TABLE kafka_lake.date_closings (
    closing_id      bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    source_id       integer NOT NULL REFERENCES kafka_lake.sources ON DELETE CASCADE,
    business_date   date NOT NULL,
    -- the closed snapshot, and what it selected
    snapshot_id     bigint NOT NULL REFERENCES kafka_lake.snapshots,
    source_hash     text NOT NULL CHECK (source_hash ~ '^[0-9a-f]{64}$'),
    selected_events integer NOT NULL CHECK (selected_events > 0),
    -- the marks were the offsets of this time (NULL: the high watermarks at the call)
    cutoff          timestamptz,
    closed_by       text NOT NULL,
    closed_at       timestamptz NOT NULL DEFAULT now(),
    -- closed: in effect; reopened: a correction was published after it;
    -- superseded: a later close_date() certified the date again
    status          text NOT NULL DEFAULT 'closed'
                    CHECK (status IN ('closed', 'reopened', 'superseded')),
    reopened_by_snapshot_id bigint REFERENCES kafka_lake.snapshots,
    superseded_by   bigint REFERENCES kafka_lake.date_closings,
    CHECK (superseded_by IS NULL OR status = 'superseded'),
    CHECK (status <> 'reopened' OR reopened_by_snapshot_id IS NOT NULL)
);
CREATE UNIQUE INDEX date_closings_in_effect_idx
    ON kafka_lake.date_closings (source_id, business_date) WHERE status <> 'superseded';
COMMENT ON TABLE kafka_lake.date_closings IS
  'One row per close_date() that closed a business date: the certificate, who made it and when; one per date is in effect';

CREATE TABLE kafka_lake.date_closing_partitions (
    closing_id           bigint NOT NULL REFERENCES kafka_lake.date_closings ON DELETE CASCADE,
    partition            integer NOT NULL CHECK (partition >= 0),
    -- every record below this offset was landed (the mark, exclusive)
    through_offset       bigint NOT NULL CHECK (through_offset >= 0),
    -- the record timestamp of the last landed record below it (NULL: none)
    through_timestamp_ms bigint,
    PRIMARY KEY (closing_id, partition)
);
COMMENT ON TABLE kafka_lake.date_closing_partitions IS
  'Per certificate and partition: the offset (exclusive) and record timestamp through which the date is complete';

CREATE TABLE kafka_lake.partition_state (
    source_id      integer NOT NULL REFERENCES kafka_lake.sources ON DELETE CASCADE,
    topic          text NOT NULL,
    partition      integer NOT NULL CHECK (partition >= 0),
    low_watermark  bigint,
    high_watermark bigint,
    last_status    text NOT NULL,
    checked_at     timestamptz NOT NULL,
    PRIMARY KEY (source_id, topic, partition)
);
COMMENT ON TABLE kafka_lake.partition_state IS
  'Per source and partition: the watermarks the last land() read, the status of its last row, and when';

SELECT pg_catalog.pg_extension_config_dump('kafka_lake.date_closings', '');
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.date_closings_closing_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.date_closing_partitions', '');
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.partition_state', '');

CREATE FUNCTION kafka_lake.close_date(
    source        text,
    business_date date,
    cutoff        timestamptz DEFAULT NULL,
    timeout       interval DEFAULT '30 s',
    OUT business_date   date,
    OUT closing_id      bigint,
    OUT status          text,
    OUT snapshot_id     bigint,
    OUT source_hash     text,
    OUT selected_events integer,
    OUT partitions      integer,
    OUT cutoff          timestamptz,
    OUT closed_by       text,
    OUT closed_at       timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'kafka_lake_close_date'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.close_date(text, date, timestamptz, interval) IS
  'Land every partition up to its mark, bridge the date below the marks and record a completeness certificate; gold becomes closed';
REVOKE ALL ON FUNCTION kafka_lake.close_date(text, date, timestamptz, interval) FROM PUBLIC;

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
     WHERE p.oid = 'kafka_lake.bridge(text, date)'::pg_catalog.regprocedure
       AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;

    DROP FUNCTION kafka_lake.bridge(text, date);
    CREATE FUNCTION kafka_lake.bridge(
        source        text,
        business_date date,
        reopen        boolean DEFAULT false,
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
    AS 'MODULE_PATHNAME', 'kafka_lake_bridge_1_1'
    LANGUAGE C VOLATILE;
    COMMENT ON FUNCTION kafka_lake.bridge(text, date, boolean) IS
      'Bridge one business date: canonical CSV (source_hash), silver, 8 quality checks, and a new gold snapshot when they pass; a closed date changes only with reopen => true';
    REVOKE ALL ON FUNCTION kafka_lake.bridge(text, date, boolean) FROM PUBLIC;
    FOREACH grantee IN ARRAY coalesce(grantees, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.bridge(text, date, boolean) TO %s', grantee);
    END LOOP;
END
$$;

-- The accepted events of a date with a certificate in effect that lie at
-- or past its partition's mark (src/late_events.c).
CREATE FUNCTION kafka_lake.late_event_list(
    OUT source text, OUT business_date date, OUT closing_id bigint,
    OUT closed_at timestamptz, OUT closing_status text, OUT topic text,
    OUT partition integer, OUT "offset" bigint, OUT through_offset bigint,
    OUT event_id text, OUT timestamp_ms bigint, OUT batch_id text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_late_event_list'
LANGUAGE C STABLE;
COMMENT ON FUNCTION kafka_lake.late_event_list() IS
  'The rows of kafka_lake.late_events (answers only roles that may read that view)';
GRANT EXECUTE ON FUNCTION kafka_lake.late_event_list() TO PUBLIC;

CREATE VIEW kafka_lake.late_events AS
    SELECT l.source, l.business_date, l.closing_id, l.closed_at, l.closing_status,
           l.topic, l.partition, l."offset", l.through_offset, l.event_id,
           l.timestamp_ms, l.batch_id, b.created_at AS landed_at
    FROM kafka_lake.late_event_list() l
    JOIN kafka_lake.sources s ON s.source = l.source
    LEFT JOIN kafka_lake.batches b ON b.source_id = s.source_id AND b.batch_id = l.batch_id;
COMMENT ON VIEW kafka_lake.late_events IS
  'Accepted events of a closed (or reopened) date that its certificate did not count, with the certificate they missed';

-- The last error of a failed land() per (source, partition), kept in
-- shared memory when kafka_lake is preloaded (src/source_status.c).
CREATE FUNCTION kafka_lake.source_errors(
    OUT source_id integer, OUT partition integer, OUT sqlstate text,
    OUT message text, OUT failed_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_source_errors'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.source_errors() IS
  'The last error of a failed land() per source and partition (answers only roles that may read kafka_lake.source_status)';
GRANT EXECUTE ON FUNCTION kafka_lake.source_errors() TO PUBLIC;

CREATE VIEW kafka_lake.source_status AS
    WITH errors AS MATERIALIZED (SELECT * FROM kafka_lake.source_errors()),
    parts AS (
        SELECT source_id, topic, partition FROM kafka_lake.partition_state
        UNION
        SELECT DISTINCT source_id, topic, partition FROM kafka_lake.batches
    ),
    landed AS (
        SELECT b.source_id, b.topic, b.partition,
               pg_catalog.count(*) AS batches,
               pg_catalog.sum(b.file_bytes[1] + b.file_bytes[2] + b.file_bytes[3]
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
           coalesce(l.accepted, 0) AS accepted,
           coalesce(l.duplicates, 0) AS duplicates,
           coalesce(l.quarantined, 0) AS quarantined,
           coalesce(l.accepted_24h, 0) AS accepted_24h,
           coalesce(l.duplicates_24h, 0) AS duplicates_24h,
           coalesce(l.quarantined_24h, 0) AS quarantined_24h,
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
COMMENT ON VIEW kafka_lake.source_status IS
  'Per source and partition, from the catalog alone: landing, offsets and lag, batches and bytes, counts, the oldest date not closed, the last error';

--------------------------------------------------------------------------
-- The bridge for any contract: silver, quality checks and gold defined per
-- source, with the seed's pipeline as one built-in definition
--
-- bridge() bridges every source whose contract gives events a business
-- date: its canonical CSV has the contract's fields, its silver is the
-- table kafka_lake.<source>_silver (created by create_source, by the first
-- define_gold/add_check/bridge of the source; machine_event_v1 sources keep
-- silver_machine_events), its quality checks are derived from the contract.
-- A gold is a row of kafka_lake.golds: a grain and either declared metrics
-- or an owner's SQL, which runs as the function <gold>_compute, SECURITY
-- DEFINER and owned by the role that defined it (never with the rights of
-- whoever calls bridge()).  The seed's gold_daily_line_metrics is the
-- built-in row (the library's own definition, kafka_lake_builtin_golds, so
-- the catalog and the code cannot disagree).  kafka_lake.quality_checks
-- holds the owners' own checks (add_check), each a function
-- <source>_check_<check> of the same kind.  The tables, views and
-- functions define_gold and add_check create are no members of the
-- extension, like <source>_events: pg_dump keeps them with their rows.
--------------------------------------------------------------------------

CREATE TABLE kafka_lake.golds (
    gold        text PRIMARY KEY CHECK (gold ~ '^[a-z_][a-z0-9_]{0,47}$'),
    -- NULL: the built-in gold of every machine_event_v1 source
    source_id   integer REFERENCES kafka_lake.sources ON DELETE CASCADE,
    grain       text[] NOT NULL,
    metrics     json,
    sql         text,
    compute     text,
    owner       name NOT NULL DEFAULT current_user,
    builtin     boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((metrics IS NULL) <> (sql IS NULL)),
    CHECK ((sql IS NULL) = (compute IS NULL)),
    CHECK (builtin = (source_id IS NULL))
);
COMMENT ON TABLE kafka_lake.golds IS
  'The golds bridge() publishes: a grain and declared metrics or an owner''s SQL; the built-in row is the seed''s gold_daily_line_metrics';

CREATE FUNCTION kafka_lake.builtin_golds(OUT gold text, OUT grain text[], OUT metrics json)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_builtin_golds'
LANGUAGE C STRICT;
INSERT INTO kafka_lake.golds (gold, source_id, grain, metrics, owner, builtin)
SELECT gold, NULL, grain, metrics, 'kafka_lake', true FROM kafka_lake.builtin_golds();
DROP FUNCTION kafka_lake.builtin_golds();

CREATE TABLE kafka_lake.quality_checks (
    source_id   integer NOT NULL REFERENCES kafka_lake.sources ON DELETE CASCADE,
    check_name  text NOT NULL CHECK (check_name ~ '^[a-z_][a-z0-9_]{0,47}$'),
    sql         text NOT NULL,
    function    text NOT NULL,
    owner       name NOT NULL DEFAULT current_user,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, check_name)
);
COMMENT ON TABLE kafka_lake.quality_checks IS
  'Owners'' own quality checks of a source (add_check): the rows of the SQL are violations; run by bridge() with the owner''s rights';

SELECT pg_catalog.pg_extension_config_dump('kafka_lake.golds', 'WHERE NOT builtin');
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.quality_checks', '');

CREATE FUNCTION kafka_lake.define_gold(
    source  text,
    gold    text,
    grain   text[],
    metrics json DEFAULT NULL,
    sql     text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_define_gold'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) IS
  'Define a gold of a source: the table kafka_lake.<gold>, its view <gold>_current and function <gold>_as_of, published by every bridge() of the source';
REVOKE ALL ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) FROM PUBLIC;

CREATE FUNCTION kafka_lake.add_check(source text, check_name text, sql text)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_add_check'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.add_check(text, text, text) IS
  'Add a quality check to every bridge() of a source: a query over silver whose rows are violations';
REVOKE ALL ON FUNCTION kafka_lake.add_check(text, text, text) FROM PUBLIC;

COMMENT ON FUNCTION kafka_lake.bridge(text, date, boolean) IS
  'Bridge one business date: canonical CSV (source_hash), silver, the quality checks, and a new snapshot of every gold of the source when they pass; a closed date changes only with reopen => true';
-- The landing's life cycle: compaction of small batches, retention of
-- record files, and replay by time
--
-- A source landed every minute makes thousands of small batch directories
-- a day, and keeps them forever.  compact() merges runs of small batches of
-- a partition into one batch: a batch like any other (landed_by 'compact'),
-- whose manifest lists every coordinate with its original fingerprint and
-- status and names the batches it replaced (compacted_from, kept here too,
-- so that recovery knows a directory a crash left behind).  expire()
-- removes the record files (accepted, duplicates, quarantine) of batches
-- whose business dates are all older than a limit, and keeps the manifest,
-- the catalog rows and every coordinate with its fingerprint (expired_at
-- says when): a redelivered expired coordinate is still reused, and the
-- foreign table and the bridge refuse an expired date instead of returning
-- part of it.  replay() gains a form by time, through the broker's
-- offsets-for-times; it never commits, like the form by offsets.  Batches
-- landed before this version have neither column set, and read as before.
-- With contracts as data: a compacted batch records the one contract
-- version of the batches it merged (a run never mixes two); readmit units
-- and the batches they re-admitted records of are never compacted; a batch
-- and its readmit units expire together.  closed_only goes by the
-- certificates of the closing section (status 'closed', in effect), and
-- source_status counts only the manifest of an expired batch.
--------------------------------------------------------------------------

ALTER TABLE kafka_lake.batches
    ADD COLUMN compacted_from text[],
    ADD COLUMN expired_at timestamptz;
COMMENT ON COLUMN kafka_lake.batches.compacted_from IS
  'The batches compact() merged into this one (NULL: landed, replayed or adopted)';
COMMENT ON COLUMN kafka_lake.batches.expired_at IS
  'When expire() removed the record files of this batch; its manifest and coordinates are kept (NULL: not expired)';
-- landed_by gains 'compact' (whatever the sections before named its CHECK)
DO $$
DECLARE
    c name;
BEGIN
    FOR c IN SELECT conname FROM pg_catalog.pg_constraint
              WHERE conrelid = 'kafka_lake.batches'::pg_catalog.regclass AND contype = 'c'
                AND pg_catalog.pg_get_constraintdef(oid) LIKE '%landed_by%'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kafka_lake.batches DROP CONSTRAINT %I', c);
    END LOOP;
END
$$;
ALTER TABLE kafka_lake.batches
    ADD CHECK (landed_by IN ('land', 'replay', 'recover', 'readmit', 'compact'));

CREATE FUNCTION kafka_lake.compact(
    source         text,
    partition      integer DEFAULT NULL,
    business_date  date DEFAULT NULL,
    target_bytes   bigint DEFAULT NULL,
    target_records integer DEFAULT NULL,
    OUT topic text, OUT partition integer, OUT batch_id text, OUT status text,
    OUT batches integer, OUT records integer,
    OUT first_offset bigint, OUT last_offset bigint, OUT bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_compact'
LANGUAGE C;
COMMENT ON FUNCTION kafka_lake.compact(text, integer, date, bigint, integer) IS
  'Merge runs of small batches of each partition into one batch each; the old directories go when the transaction commits';

CREATE FUNCTION kafka_lake.expire(
    source      text,
    before      date DEFAULT NULL,
    older_than  interval DEFAULT NULL,
    closed_only boolean DEFAULT false,
    OUT topic text, OUT partition integer, OUT batch_id text, OUT status text,
    OUT records integer, OUT min_business_date date, OUT max_business_date date,
    OUT bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_expire'
LANGUAGE C;
COMMENT ON FUNCTION kafka_lake.expire(text, date, interval, boolean) IS
  'Remove the record files of batches whose business dates are all older than the limit; manifests, coordinates and catalog rows are kept';

-- A function of its own (C symbol kafka_lake_replay_by_time): replay by
-- offsets keeps its signature and symbol.  No call of the form by offsets
-- can match this one (its second and third arguments are timestamps, and
-- its names differ), so named and positional calls of either resolve as
-- before.
CREATE FUNCTION kafka_lake.replay(
    source    text,
    from_time timestamptz,
    to_time   timestamptz,
    partition integer DEFAULT NULL,
    timeout   interval DEFAULT '30 s',
    OUT topic text, OUT partition integer, OUT batch_id text, OUT status text,
    OUT records integer, OUT accepted integer, OUT duplicates integer,
    OUT quarantined integer, OUT reused integer,
    OUT first_offset bigint, OUT last_offset bigint, OUT committed_offset bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_replay_by_time'
LANGUAGE C;
COMMENT ON FUNCTION kafka_lake.replay(text, timestamptz, timestamptz, integer, interval) IS
  'Read again the records whose timestamps lie in [from_time, to_time), per partition: land what is not yet durable, report the rest as reused; never commits';

REVOKE ALL ON FUNCTION kafka_lake.compact(text, integer, date, bigint, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka_lake.expire(text, date, interval, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION kafka_lake.replay(text, timestamptz, timestamptz, integer, interval) FROM PUBLIC;

-- source_status (created by the closing section above) counts the bytes a
-- partition holds on disk: an expired batch holds its manifest only.  The
-- view is replaced with the same columns; only bytes_on_disk changes.
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
           coalesce(l.accepted, 0) AS accepted,
           coalesce(l.duplicates, 0) AS duplicates,
           coalesce(l.quarantined, 0) AS quarantined,
           coalesce(l.accepted_24h, 0) AS accepted_24h,
           coalesce(l.duplicates_24h, 0) AS duplicates_24h,
           coalesce(l.quarantined_24h, 0) AS quarantined_24h,
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
-- Silver's BRIN index summarises at VACUUM, not per filled range
--
-- With autosummarize, every block range a bridge fills asks autovacuum to
-- summarise it through a queue of 256 work items: a bridge of about a
-- million events fills more ranges than that, and PostgreSQL writes a LOG
-- line for each request it drops (hundreds per bridge).  Nothing reads
-- those summaries before the next VACUUM anyway: the bridge's own checks
-- read the run it has just written, whose ranges are never summarised yet,
-- and the inserts of a bridge make autovacuum vacuum the table, which
-- summarises every new range.  So the index waits for VACUUM (a source's
-- own <source>_silver is created the same way).
--------------------------------------------------------------------------
ALTER INDEX kafka_lake.silver_machine_events_run_idx SET (autosummarize = off);
