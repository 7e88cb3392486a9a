/* sql/kafka_lake--1.8--1.9.sql
 *
 * Upgrade of kafka_lake 1.8 to 1.9.  The scripts up to 1.8 are released and
 * never change: every catalog or function change of 1.9 is made here, so
 * that a database created at an earlier version and one created at 1.9 end
 * with the same objects (test/t/99e_upgrade_1_9.sh checks the path).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.9'" to load this file. \quit

-- An expired batch's fingerprints live on disk only
--
-- The 32-byte fingerprint of every coordinate is what tells a redelivered
-- record from a changed one (reused, or refused).  A batch's manifest holds
-- them too, and an expired batch is never read again: so from 1.9 its
-- coordinates row keeps its offsets and statuses and no fingerprints
-- (NULL), and a redelivery of one of its coordinates reads them from the
-- batch's manifest (src/landing/land.c).  33 bytes a record less in the
-- catalog for as long as the source lives; the coordinates still say which
-- offsets landed (I2).
ALTER TABLE kafka_lake.coordinates ALTER COLUMN fingerprints DROP NOT NULL;

DO $$
DECLARE
    con name;
BEGIN
    -- 1.0's check of the fingerprints' length has the name PostgreSQL gave it
    FOR con IN
        SELECT conname FROM pg_catalog.pg_constraint
         WHERE conrelid = 'kafka_lake.coordinates'::pg_catalog.regclass AND contype = 'c'
           AND pg_catalog.pg_get_constraintdef(oid) LIKE '%octet_length(fingerprints)%'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE kafka_lake.coordinates DROP CONSTRAINT %I', con);
    END LOOP;
END
$$;

ALTER TABLE kafka_lake.coordinates
    ADD CONSTRAINT coordinates_fingerprints_check
    CHECK (fingerprints IS NULL OR octet_length(fingerprints) = 32 * length(statuses));

COMMENT ON COLUMN kafka_lake.coordinates.fingerprints IS
  'The 32-byte SHA-256 fingerprint of each coordinate, in offset order; NULL once the batch expired (its manifest keeps them).';

-- the batches that expired before 1.9: their manifests keep the fingerprints
UPDATE kafka_lake.coordinates c SET fingerprints = NULL
  FROM kafka_lake.batches b
 WHERE b.source_id = c.source_id AND b.batch_id = c.batch_id
   AND b.expired_at IS NOT NULL AND c.fingerprints IS NOT NULL;

-- An expired batch whose event_ids are gone keeps a reduced manifest
--
-- Once a batch expired and none of its event_ids is in accepted_events any
-- more (they went past the source's dedupe horizon, or its contract has
-- none), what a redelivery and recover() still need of it is its offsets,
-- its statuses and its fingerprints; expire() then replaces its manifest
-- by manifest.reduced.json(.zst): those, with 8-byte prefixes of the
-- fingerprints and one SHA-256 over them all (src/lifecycle/expire.c).
-- reduced_at says when; manifest_sha256, manifest_bytes and
-- manifest_crc32c are then the reduced manifest's.
ALTER TABLE kafka_lake.batches ADD COLUMN reduced_at timestamptz;
ALTER TABLE kafka_lake.batches
    ADD CONSTRAINT batches_reduced_check CHECK (reduced_at IS NULL OR expired_at IS NOT NULL);
COMMENT ON COLUMN kafka_lake.batches.reduced_at IS
  'When expire() reduced the expired batch''s manifest to its offsets, statuses and fingerprint prefixes (manifest.reduced.json); NULL: not reduced.';
