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
