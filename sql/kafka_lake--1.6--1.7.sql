/* sql/kafka_lake--1.6--1.7.sql
 *
 * Upgrade of kafka_lake 1.6 to 1.7.  The scripts up to 1.6 are released and
 * never change: every catalog or function change of 1.7 is made here, so
 * that a database created at an earlier version and one created at 1.7 end
 * with the same objects (test/t/99c_upgrade_1_7.sh checks the path).
 * Everything landed, bridged and closed before stays readable, verifiable
 * and bridgeable as it was: its batches are plain JSONL and stay so.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.7'" to load this file. \quit

-- compressed batches
--
-- A source's batches are written plain ('none': the JSONL files and
-- manifest.json of 1.0) or compressed ('zstd': each file one zstd frame,
-- named *.zst).  The sources that exist keep what they have; a source
-- created from 1.7 on compresses (set_compression() changes either).
ALTER TABLE kafka_lake.sources
    ADD COLUMN compression text NOT NULL DEFAULT 'none'
        CHECK (compression IN ('none', 'zstd'));
ALTER TABLE kafka_lake.sources ALTER COLUMN compression SET DEFAULT 'zstd';
COMMENT ON COLUMN kafka_lake.sources.compression IS
  'How the source''s new batches are stored: zstd (each file one zstd frame, named *.zst) or none (plain JSONL)';

-- each batch says how it was written; a compressed one also the bytes of
-- its files' lines (file_bytes, file_crc32c and file_sha256 are of the
-- files on disk, file_lines of their lines)
ALTER TABLE kafka_lake.batches
    ADD COLUMN compression text CHECK (compression IN ('zstd')),
    ADD COLUMN file_raw_bytes bigint[] CHECK (cardinality(file_raw_bytes) = 3),
    ADD CHECK ((compression IS NULL) = (file_raw_bytes IS NULL));
COMMENT ON COLUMN kafka_lake.batches.compression IS
  'zstd: the batch''s files are zstd frames named *.zst (NULL: plain JSONL and manifest.json)';
COMMENT ON COLUMN kafka_lake.batches.file_raw_bytes IS
  'Of a compressed batch: the bytes of each record file''s lines, uncompressed (NULL: file_bytes are)';

CREATE FUNCTION kafka_lake.set_compression(source text, compression text)
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_set_compression'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.set_compression(text, text) IS
  'How a source''s batches are stored from its next landing on: zstd or none (what landed stays as it is)';
REVOKE ALL ON FUNCTION kafka_lake.set_compression(text, text) FROM PUBLIC;
