/* sql/kafka_lake--1.9--1.10.sql
 *
 * Upgrade of kafka_lake 1.9 to 1.10.  The scripts up to 1.9 are released and
 * never change: every catalog or function change of 1.10 is made here, so
 * that a database created at an earlier version and one created at 1.10 end
 * with the same objects (test/t/99f_upgrade_1_10.sh checks the path).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.10'" to load this file. \quit

-- A published date as Parquet files
--
-- export() writes a date's current snapshot, its silver rows and the rows of
-- every gold it published, as Parquet files under kafka_lake.export_dir (a
-- superuser's setting, absolute, outside the data directory), one directory
-- per relation and date that DuckDB, Spark and Trino read, plus a JSON file
-- per date naming the snapshot and each file's size and SHA-256.  A later
-- snapshot of the date replaces each relation's files in one atomic step
-- (src/export/export.c).  Nothing of the catalog changes: what was exported
-- is on disk, in the JSON.
CREATE FUNCTION kafka_lake.export(
    source         text,
    business_date  date,
    row_group_rows integer DEFAULT 122880,
    OUT snapshot_id bigint, OUT relation text, OUT file text, OUT rows bigint,
    OUT bytes bigint, OUT sha256 text, OUT status text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_export'
LANGUAGE C;
COMMENT ON FUNCTION kafka_lake.export(text, date, integer) IS
  'Write a business date''s current snapshot (its silver rows and every gold) as Parquet files under kafka_lake.export_dir';
REVOKE ALL ON FUNCTION kafka_lake.export(text, date, integer) FROM PUBLIC;
