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
--------------------------------------------------------------------------

ALTER TABLE kafka_lake.batches
    ADD COLUMN compacted_from text[],
    ADD COLUMN expired_at timestamptz;
COMMENT ON COLUMN kafka_lake.batches.compacted_from IS
  'The batches compact() merged into this one (NULL: landed, replayed or adopted)';
COMMENT ON COLUMN kafka_lake.batches.expired_at IS
  'When expire() removed the record files of this batch; its manifest and coordinates are kept (NULL: not expired)';
ALTER TABLE kafka_lake.batches DROP CONSTRAINT batches_landed_by_check;
ALTER TABLE kafka_lake.batches ADD CONSTRAINT batches_landed_by_check
    CHECK (landed_by IN ('land', 'replay', 'recover', 'compact'));

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
