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
