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

-- bridge() and close_date() gain export (default false): the date's current
-- snapshot is exported too, as export() does, and put in place when the
-- transaction commits.  C symbols kafka_lake_bridge_1_10 and
-- kafka_lake_close_date_1_10; both functions are created again with their
-- grants (a pg_cron job names them by text, and keeps working).
DO $$
DECLARE
    bridge_grantees text[];
    close_grantees text[];
    grantee text;
BEGIN
    SELECT array_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                   ELSE pg_catalog.quote_ident(r.rolname) END)
             FILTER (WHERE p.proname = 'bridge'),
           array_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                   ELSE pg_catalog.quote_ident(r.rolname) END)
             FILTER (WHERE p.proname = 'close_date')
      INTO bridge_grantees, close_grantees
      FROM pg_catalog.pg_proc p
     CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
      LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
     WHERE p.oid IN ('kafka_lake.bridge(text, date, boolean, boolean)'::pg_catalog.regprocedure,
                     'kafka_lake.close_date(text, date, timestamptz, interval)'::pg_catalog.regprocedure)
       AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;

    DROP FUNCTION kafka_lake.bridge(text, date, boolean, boolean);
    CREATE FUNCTION kafka_lake.bridge(
        source        text,
        business_date date,
        reopen        boolean DEFAULT false,
        recheck       boolean DEFAULT false,
        export        boolean DEFAULT false,
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
    AS 'MODULE_PATHNAME', 'kafka_lake_bridge_1_10'
    LANGUAGE C VOLATILE;
    COMMENT ON FUNCTION kafka_lake.bridge(text, date, boolean, boolean, boolean) IS
      'Bridge one business date: canonical CSV (source_hash), silver, the quality checks, and a new snapshot of every gold of the source when they pass; recheck => true runs the current golds and checks again over an unchanged date; a closed date changes only with reopen => true; export => true writes the date''s current snapshot as Parquet too';
    REVOKE ALL ON FUNCTION kafka_lake.bridge(text, date, boolean, boolean, boolean) FROM PUBLIC;

    DROP FUNCTION kafka_lake.close_date(text, date, timestamptz, interval);
    CREATE FUNCTION kafka_lake.close_date(
        source        text,
        business_date date,
        cutoff        timestamptz DEFAULT NULL,
        timeout       interval DEFAULT '30 s',
        export        boolean DEFAULT false,
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
    AS 'MODULE_PATHNAME', 'kafka_lake_close_date_1_10'
    LANGUAGE C VOLATILE;
    COMMENT ON FUNCTION kafka_lake.close_date(text, date, timestamptz, interval, boolean) IS
      'Land every partition up to its mark, bridge the date below the marks and record a completeness certificate; gold becomes closed; export => true writes the closed snapshot as Parquet too';
    REVOKE ALL ON FUNCTION kafka_lake.close_date(text, date, timestamptz, interval, boolean) FROM PUBLIC;

    FOREACH grantee IN ARRAY coalesce(bridge_grantees, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.bridge(text, date, boolean, boolean, boolean) TO %s', grantee);
    END LOOP;
    FOREACH grantee IN ARRAY coalesce(close_grantees, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.close_date(text, date, timestamptz, interval, boolean) TO %s', grantee);
    END LOOP;
END
$$;
