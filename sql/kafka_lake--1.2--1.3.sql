/* sql/kafka_lake--1.2--1.3.sql
 *
 * Upgrade of kafka_lake 1.2 to 1.3.  The scripts of 1.0, 1.1 and 1.2 are
 * released and never change: every catalog or function change of 1.3 is
 * made here, so that a database created at 1.0, 1.1 or 1.2 and one created
 * at 1.3 end with the same objects (test/t/35_upgrade.sh,
 * test/t/92_upgrade_1_1.sh and test/t/93_upgrade_1_2.sh check the paths).
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
