/* sql/kafka_lake--1.10--1.11.sql
 *
 * Upgrade of kafka_lake 1.10 to 1.11.  The scripts up to 1.10 are released
 * and never change: every catalog or function change of 1.11 is made here, so
 * that a database created at an earlier version and one created at 1.11 end
 * with the same objects (test/t/99g_upgrade_1_11.sh checks the path).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.11'" to load this file. \quit

-- Partitions owned: a topic landed by several servers
--
-- A source may land only some partitions of its topics (the same numbers in
-- each topic), so that several PostgreSQL servers share a topic too big for
-- one, each owning a disjoint set.  NULL, the default and what every source
-- created before 1.11 has, is every partition.  land(), replay(), lag() and
-- close_date() work on the owned partitions only (src/source.c).
ALTER TABLE kafka_lake.sources ADD COLUMN partitions integer[]
    CONSTRAINT sources_partitions_check
    CHECK (partitions IS NULL
           OR (pg_catalog.array_ndims(partitions) = 1
               AND pg_catalog.cardinality(partitions) >= 1
               AND 0 <= ALL (partitions)
               AND pg_catalog.array_position(partitions, NULL) IS NULL));
COMMENT ON COLUMN kafka_lake.sources.partitions IS
  'The partitions of its topics this server lands, ascending; NULL: every partition';

CREATE FUNCTION kafka_lake.set_partitions(source text, partitions integer[])
RETURNS void
AS 'MODULE_PATHNAME', 'kafka_lake_set_partitions'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.set_partitions(text, integer[]) IS
  'Land only these partitions of the source''s topics from now on (NULL: every partition); what landed stays';
REVOKE ALL ON FUNCTION kafka_lake.set_partitions(text, integer[]) FROM PUBLIC;

-- create_source() gains partitions (default NULL: every partition), created
-- again with its grants (the same C function reads the sixth argument when
-- there is one).
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
     WHERE p.oid = 'kafka_lake.create_source(text, text, text, text, text)'::pg_catalog.regprocedure
       AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;

    DROP FUNCTION kafka_lake.create_source(text, text, text, text, text);
    CREATE FUNCTION kafka_lake.create_source(
        source     text,
        server     text,
        topic      text,
        group_id   text DEFAULT NULL,
        contract   text DEFAULT 'machine_event_v1',
        partitions integer[] DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'kafka_lake_create_source'
    LANGUAGE C;
    COMMENT ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]) IS
      'Record a source (a topic, or several, of a kafka_lake server; all its partitions, or those given) and create its foreign tables kafka_lake.<source>_records and <source>_events';
    REVOKE ALL ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]) FROM PUBLIC;

    FOREACH grantee IN ARRAY coalesce(grantees, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION kafka_lake.create_source(text, text, text, text, text, integer[]) TO %s', grantee);
    END LOOP;
END
$$;

-- source_status gains owned: does this server land the partition now?  (A
-- partition given up keeps its row, owned false, with what landed of it.)
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
           e.failed_at AS last_error_at,
           (SELECT pg_catalog.max(dc.business_date) FROM kafka_lake.date_closings dc
             WHERE dc.source_id = s.source_id AND dc.status <> 'superseded'
               AND dc.event_ids_pruned_at IS NOT NULL) AS event_ids_pruned_through,
           (s.partitions IS NULL OR p.partition = ANY (s.partitions)) AS owned
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
           AND (x.partition IS NULL
                OR (x.partition = p.partition
                    AND (pg_catalog.string_to_array(s.topic, ','))[x.topic_index + 1] = p.topic))
         ORDER BY x.failed_at DESC LIMIT 1
    ) e ON true;

-- A certificate records which partitions the source owned when it closed the
-- date (true for every certificate made before 1.11: its source owned them all).
ALTER TABLE kafka_lake.date_closing_partitions
    ADD COLUMN owned boolean NOT NULL DEFAULT true;
COMMENT ON COLUMN kafka_lake.date_closing_partitions.owned IS
  'Did the source own the partition when it closed the date?  (Not owned: certified through what this server landed of it)';

--------------------------------------------------------------------------
-- A coordinator: one view of a topic landed by several servers
--------------------------------------------------------------------------
--
-- On a coordinator database (no landing of its own), attach_shards() reads a
-- source's shards through postgres_fdw: per shard, foreign tables over the
-- shard's <source>_records, <source>_events, silver table and the catalog
-- tables the checks need, named kafka_lake.<source>_s<n>_<table>; and views
-- kafka_lake.<source>_records, _events and _silver, the UNION ALL of the
-- shards with a column shard.  Views rather than a table partitioned by the
-- Kafka partition: a partition moved between servers keeps its history on
-- the old owner, so pruning by partition would hide it.  The foreign tables
-- of the data are async_capable, so a query reads the shards concurrently
-- (Async Foreign Scan under one Append), each with its WHERE pushed down.
-- certify_shards() certifies one date across them.  Written in PL/pgSQL:
-- everything it does is SQL against postgres_fdw; every name it builds is
-- quoted, and each function runs with search_path pinned to pg_catalog.

CREATE TABLE kafka_lake.shards (
    source           text NOT NULL CHECK (source ~ '^[a-z_][a-z0-9_]{0,39}$'),
    shard_number     integer NOT NULL CHECK (shard_number BETWEEN 1 AND 999),
    shard            text NOT NULL,      -- a postgres_fdw server of this database
    remote_source    text NOT NULL,      -- the source's name on the shard
    remote_source_id integer NOT NULL,
    silver_table     text NOT NULL,      -- the source's silver table on the shard
    gold_views       text[] NOT NULL DEFAULT '{}',  -- the combined golds made (the same on each row)
    attached_by      text NOT NULL DEFAULT current_user,
    attached_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (source, shard_number),
    UNIQUE (source, shard)
);
COMMENT ON TABLE kafka_lake.shards IS
  'On a coordinator: the shards (postgres_fdw servers) of each source attached by attach_shards()';
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.shards', '');

CREATE TABLE kafka_lake.shard_certificates (
    certificate_id  bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    source          text NOT NULL,
    business_date   date NOT NULL,
    combined_hash   text NOT NULL,
    selected_events bigint NOT NULL,
    -- shards: per shard its closing_id, snapshot_id, source_hash, selected_events and the
    -- partitions it owned; golds: per combined gold its rows of the date and their md5
    shards          jsonb NOT NULL,
    status          text NOT NULL CHECK (status IN ('certified', 'superseded')),
    certified_by    text NOT NULL DEFAULT current_user,
    certified_at    timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE UNIQUE INDEX shard_certificates_one_idx
    ON kafka_lake.shard_certificates (source, business_date) WHERE status = 'certified';
COMMENT ON TABLE kafka_lake.shard_certificates IS
  'On a coordinator: per source and date, the certificate certify_shards() made from every shard''s closing';
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.shard_certificates', '');
SELECT pg_catalog.pg_extension_config_dump('kafka_lake.shard_certificates_certificate_id_seq', '');

-- An average or ratio of a declared gold from its parts, rounded as the bridge rounds it; what a
-- coordinator's combined gold computes its averages and ratios with.  It reads nothing of the
-- database: PUBLIC may execute it (every reader of a combined gold does).
CREATE FUNCTION kafka_lake.metric_quotient(numerator numeric, denominator numeric, round integer,
                                           rounding text DEFAULT 'half_up', integers boolean DEFAULT false)
RETURNS numeric
AS 'MODULE_PATHNAME', 'kafka_lake_metric_quotient'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kafka_lake.metric_quotient(numeric, numeric, integer, text, boolean) IS
  'numerator / denominator rounded to round decimals as a declared gold rounds it (half_up, or python: of the double quotient); NULL for a zero denominator';

-- the relations attach_shards() makes for a source (foreign tables, views)
CREATE FUNCTION kafka_lake.shard_relations(source text, shard_number integer)
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT ARRAY(SELECT format('%s_s%s_%s', source, shard_number, t)
                 FROM unnest(ARRAY['records', 'events', 'silver', 'sources', 'snapshots',
                                   'closings', 'closing_partitions', 'batches', 'golds', 'contracts']) t)
$$;
REVOKE ALL ON FUNCTION kafka_lake.shard_relations(text, integer) FROM PUBLIC;

CREATE FUNCTION kafka_lake.attach_shards(
    source        text,
    shards        text[],
    remote_source text DEFAULT NULL,
    OUT shard        text,
    OUT shard_number integer,
    OUT partitions   integer[],
    OUT relations    integer)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    remote   text := coalesce(attach_shards.remote_source, attach_shards.source);
    staging  text := format('kafka_lake_attach_%s', pg_backend_pid());
    n        integer := 0;
    srv      text;
    rid      integer;
    contract text;
    silver   text;
    owned    integer[];
    rel      text;
    made     integer;
    branches text[];
    g        record;
    m        record;
    k        integer;
    gview    text;
    views    text[] := '{}';
    exprs    text[];
    kinds    text[];
    ints     boolean[];
    op       text;
    field    text;
    is_int   boolean;
    expr     text;
    num      text;
    den      text;
BEGIN
    IF attach_shards.source IS NULL OR attach_shards.shards IS NULL THEN
        RAISE EXCEPTION 'source and shards must not be null'
            USING ERRCODE = '22004', HINT = 'Name the source and the postgres_fdw servers of its shards, for example ARRAY[''shard_a'', ''shard_b''].';
    END IF;
    IF attach_shards.source !~ '^[a-z_][a-z0-9_]{0,39}$' THEN
        RAISE EXCEPTION 'invalid source name "%"', attach_shards.source
            USING ERRCODE = '42602', HINT = 'A coordinated source name matches [a-z_][a-z0-9_]* and has at most 40 characters.';
    END IF;
    IF cardinality(attach_shards.shards) = 0 OR array_position(attach_shards.shards, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'shards must name at least one server, and no NULL'
            USING ERRCODE = '22023', HINT = 'Name the postgres_fdw servers of the shards.';
    END IF;
    IF (SELECT count(DISTINCT s) FROM unnest(attach_shards.shards) s) <> cardinality(attach_shards.shards) THEN
        RAISE EXCEPTION 'a shard is named twice'
            USING ERRCODE = '22023', HINT = 'Name each shard''s server once.';
    END IF;
    IF EXISTS (SELECT 1 FROM kafka_lake.sources s WHERE s.source = attach_shards.source)
       OR EXISTS (SELECT 1 FROM kafka_lake.shards s WHERE s.source = attach_shards.source) THEN
        RAISE EXCEPTION 'source "%" already exists in this database', attach_shards.source
            USING ERRCODE = '42710', HINT = 'A coordinator attaches a source once (kafka_lake.detach_shards() forgets it), and lands none of the same name.';
    END IF;
    FOREACH srv IN ARRAY attach_shards.shards LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_foreign_server fs JOIN pg_foreign_data_wrapper w ON w.oid = fs.srvfdw
                        WHERE fs.srvname = srv AND w.fdwname = 'postgres_fdw') THEN
            RAISE EXCEPTION 'server "%" is not a postgres_fdw server of this database', srv
                USING ERRCODE = '42704', HINT = 'CREATE EXTENSION postgres_fdw; CREATE SERVER ... FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host ..., dbname ...), with a user mapping.';
        END IF;
    END LOOP;
    FOREACH rel IN ARRAY ARRAY['records', 'events', 'silver'] LOOP
        IF to_regclass(format('kafka_lake.%I', attach_shards.source || '_' || rel)) IS NOT NULL THEN
            RAISE EXCEPTION 'source "%" cannot be attached: kafka_lake.% exists', attach_shards.source,
                            quote_ident(attach_shards.source || '_' || rel)
                USING ERRCODE = '42P07', HINT = 'Choose another source name.';
        END IF;
    END LOOP;

    EXECUTE format('CREATE SCHEMA %I', staging);
    FOREACH srv IN ARRAY attach_shards.shards LOOP
        n := n + 1;
        FOREACH rel IN ARRAY kafka_lake.shard_relations(attach_shards.source, n) LOOP
            IF to_regclass(format('kafka_lake.%I', rel)) IS NOT NULL THEN
                RAISE EXCEPTION 'source "%" cannot be attached: kafka_lake.% exists', attach_shards.source, quote_ident(rel)
                    USING ERRCODE = '42P07', HINT = 'Choose another source name.';
            END IF;
        END LOOP;
        -- the shard's catalog first: the source's id, contract and partitions
        EXECUTE format('IMPORT FOREIGN SCHEMA kafka_lake LIMIT TO (sources, snapshots, date_closings, date_closing_partitions, batches, golds, contracts) FROM SERVER %I INTO %I',
                       srv, staging);
        IF to_regclass(format('%I.date_closing_partitions', staging)) IS NULL
           OR NOT EXISTS (SELECT 1 FROM pg_attribute
                           WHERE attrelid = to_regclass(format('%I.date_closing_partitions', staging))
                             AND attname = 'owned') THEN
            RAISE EXCEPTION 'shard "%" has no kafka_lake catalog of version 1.11 or later', srv
                USING ERRCODE = '55000', HINT = 'Run ALTER EXTENSION kafka_lake UPDATE on the shard.';
        END IF;
        EXECUTE format('SELECT s.source_id, s.contract, s.partitions FROM %I.sources s WHERE s.source = $1', staging)
            INTO rid, contract, owned USING remote;
        IF rid IS NULL THEN
            RAISE EXCEPTION 'shard "%" has no source "%"', srv, remote
                USING ERRCODE = '42704', HINT = 'Give remote_source => the source''s name on the shards.';
        END IF;
        silver := CASE WHEN contract = 'machine_event_v1' THEN 'silver_machine_events' ELSE remote || '_silver' END;
        EXECUTE format('IMPORT FOREIGN SCHEMA kafka_lake LIMIT TO (%I, %I, %I) FROM SERVER %I INTO %I',
                       remote || '_records', remote || '_events', silver, srv, staging);
        made := 0;
        FOR rel IN SELECT unnest(ARRAY[remote || '_records', remote || '_events', silver, 'sources', 'snapshots',
                                       'date_closings', 'date_closing_partitions', 'batches', 'golds', 'contracts']) LOOP
            IF to_regclass(format('%I.%I', staging, rel)) IS NULL THEN
                RAISE EXCEPTION 'shard "%" has no kafka_lake.%', srv, quote_ident(rel)
                    USING ERRCODE = '42P01', HINT = 'Bridge the source on the shard once: its silver table is made by its first bridge.';
            END IF;
            EXECUTE format('ALTER FOREIGN TABLE %I.%I RENAME TO %I', staging, rel,
                           format('%s_s%s_%s', attach_shards.source, n,
                                  CASE rel WHEN remote || '_records' THEN 'records'
                                           WHEN remote || '_events' THEN 'events'
                                           WHEN silver THEN 'silver'
                                           WHEN 'date_closings' THEN 'closings'
                                           WHEN 'date_closing_partitions' THEN 'closing_partitions'
                                           ELSE rel END));
            made := made + 1;
        END LOOP;
        FOREACH rel IN ARRAY kafka_lake.shard_relations(attach_shards.source, n) LOOP
            EXECUTE format('ALTER FOREIGN TABLE %I.%I SET SCHEMA kafka_lake', staging, rel);
        END LOOP;
        FOREACH rel IN ARRAY (kafka_lake.shard_relations(attach_shards.source, n))[1:3] LOOP
            EXECUTE format('ALTER FOREIGN TABLE kafka_lake.%I OPTIONS (ADD async_capable ''true'', ADD fetch_size ''10000'')', rel);
        END LOOP;
        INSERT INTO kafka_lake.shards (source, shard_number, shard, remote_source, remote_source_id, silver_table)
        VALUES (attach_shards.source, n, srv, remote, rid, silver);
        shard := srv; shard_number := n; partitions := owned; relations := made;
        RETURN NEXT;
    END LOOP;
    EXECUTE format('DROP SCHEMA %I', staging);

    -- the views: every shard's rows, and which shard holds them
    FOREACH rel IN ARRAY ARRAY['records', 'events'] LOOP
        SELECT array_agg(format('SELECT r.*, %L::text AS shard FROM kafka_lake.%I r', s.shard,
                                format('%s_s%s_%s', s.source, s.shard_number, rel)) ORDER BY s.shard_number)
          INTO branches FROM kafka_lake.shards s WHERE s.source = attach_shards.source;
        EXECUTE format('CREATE VIEW kafka_lake.%I AS %s', attach_shards.source || '_' || rel,
                       array_to_string(branches, ' UNION ALL '));
    END LOOP;
    -- silver: the rows of each shard's current snapshot of each date
    SELECT array_agg(format('SELECT r.*, %L::text AS shard FROM kafka_lake.%I r'
                            ' WHERE r.run_id IN (SELECT p.run_id FROM kafka_lake.%I p WHERE p.is_current AND p.source_id = %s)',
                            s.shard, format('%s_s%s_silver', s.source, s.shard_number),
                            format('%s_s%s_snapshots', s.source, s.shard_number), s.remote_source_id)
                     ORDER BY s.shard_number)
      INTO branches FROM kafka_lake.shards s WHERE s.source = attach_shards.source;
    EXECUTE format('CREATE VIEW kafka_lake.%I AS %s', attach_shards.source || '_silver',
                   array_to_string(branches, ' UNION ALL '));

    -- each declared gold of the source, combined: its metrics computed again over every shard's
    -- silver, as the bridge computes them (averages and ratios from their parts, rounded as the
    -- bridge rounds them: metric_quotient); the shards must define it alike
    FOR g IN EXECUTE format('SELECT g.gold, g.grain, g.metrics::text AS metrics, g.sql IS NOT NULL AS is_sql FROM kafka_lake.%I g'
                            ' WHERE g.source_id = %s OR (g.builtin AND %L = ''silver_machine_events'') ORDER BY g.gold',
                            attach_shards.source || '_s1_golds',
                            (SELECT x.remote_source_id FROM kafka_lake.shards x WHERE x.source = attach_shards.source AND x.shard_number = 1),
                            (SELECT x.silver_table FROM kafka_lake.shards x WHERE x.source = attach_shards.source AND x.shard_number = 1)) LOOP
        FOR k IN 2 .. n LOOP
            EXECUTE format('SELECT count(*) FROM kafka_lake.%I g WHERE g.gold = $1 AND g.grain = $2 AND g.metrics::text IS NOT DISTINCT FROM $3 AND (g.sql IS NOT NULL) = $4',
                           format('%s_s%s_golds', attach_shards.source, k))
                INTO made USING g.gold, g.grain, g.metrics, g.is_sql;
            IF made <> 1 THEN
                RAISE EXCEPTION 'gold "%" of source "%" is not defined alike on every shard', g.gold, attach_shards.source
                    USING ERRCODE = '55000', DETAIL = format('Shard %s defines it otherwise, or not at all.', attach_shards.shards[k]),
                          HINT = 'Define the gold with the same grain and metrics on every shard, then attach again.';
            END IF;
        END LOOP;
        IF g.is_sql THEN
            RAISE NOTICE 'gold "%" of source "%" is a SQL gold: it is not combined here', g.gold, attach_shards.source
                USING HINT = format('Its function runs on the shards; query kafka_lake.%I for the rows it reads.', attach_shards.source || '_silver');
            CONTINUE;
        END IF;
        gview := attach_shards.source || '_' || g.gold;
        IF octet_length(gview) > 63 OR to_regclass(format('kafka_lake.%I', gview)) IS NOT NULL THEN
            RAISE EXCEPTION 'gold "%" of source "%" cannot be combined here: kafka_lake.% %', g.gold, attach_shards.source,
                            quote_ident(gview), CASE WHEN octet_length(gview) > 63 THEN 'is too long a name' ELSE 'exists' END
                USING ERRCODE = '42P07', HINT = 'Attach the source under a shorter name (remote_source => its name on the shards).';
        END IF;
        exprs := '{}';
        kinds := '{}';
        ints := '{}';
        -- the sums, counts, minima and maxima first, then the ratios of them, in the metrics' order
        FOR m IN SELECT e.key AS name, e.value AS spec FROM json_each(g.metrics::json) e LOOP
            op := (SELECT k2 FROM json_object_keys(m.spec) k2 WHERE k2 IN ('sum', 'count', 'min', 'max', 'avg', 'ratio'));
            is_int := false;
            IF op IN ('sum', 'min', 'max', 'avg') OR (op = 'count' AND m.spec->>'count' <> '*') THEN
                field := m.spec->>op;
                is_int := coalesce((SELECT format_type(a.atttypid, NULL) IN ('smallint', 'integer', 'bigint')
                                      FROM pg_attribute a
                                     WHERE a.attrelid = to_regclass(format('kafka_lake.%I', attach_shards.source || '_s1_silver'))
                                       AND a.attname = field AND NOT a.attisdropped), false);
            END IF;
            expr := CASE op
                WHEN 'sum' THEN CASE WHEN is_int THEN format('sum(%I)::bigint', field) ELSE format('sum(%I)', field) END
                WHEN 'count' THEN CASE WHEN m.spec->>'count' = '*' THEN 'count(*)' ELSE format('count(%I)', field) END
                WHEN 'min' THEN format('min(%I)', field)
                WHEN 'max' THEN format('max(%I)', field)
                WHEN 'avg' THEN format('kafka_lake.metric_quotient(sum(%I)::numeric, count(%I)::numeric, %s, %L, %L)::numeric(38,%s)',
                                       field, field, (m.spec->>'round')::integer, coalesce(m.spec->>'rounding', 'half_up'),
                                       is_int, (m.spec->>'round')::integer)
                END;
            exprs := exprs || expr;
            kinds := kinds || m.name;
            ints := ints || (op = 'count' OR (op IN ('sum', 'min', 'max') AND is_int));
        END LOOP;
        FOR m IN SELECT e.key AS name, e.value AS spec, i FROM json_each(g.metrics::json) WITH ORDINALITY e(key, value, i)
                  WHERE (e.value::jsonb) ? 'ratio' LOOP
            num := exprs[array_position(kinds, m.spec->'ratio'->>0)];
            den := exprs[array_position(kinds, m.spec->'ratio'->>1)];
            exprs[m.i] := format('(CASE WHEN (%1$s) IS NULL OR (%2$s) IS NULL THEN NULL WHEN (%2$s) = 0 THEN 0'
                                 ' ELSE kafka_lake.metric_quotient((%1$s)::numeric, (%2$s)::numeric, %3$s, %4$L, %5$L) END)::numeric(38,%3$s)',
                                 num, den, (m.spec->>'round')::integer, coalesce(m.spec->>'rounding', 'half_up'),
                                 ints[array_position(kinds, m.spec->'ratio'->>0)] AND ints[array_position(kinds, m.spec->'ratio'->>1)]);
        END LOOP;
        EXECUTE format('CREATE VIEW kafka_lake.%I AS SELECT business_date%s%s FROM kafka_lake.%I GROUP BY business_date%s',
                       gview,
                       (SELECT string_agg(format(', %I', f), '' ORDER BY i) FROM unnest(g.grain) WITH ORDINALITY u(f, i) WHERE f <> 'business_date'),
                       (SELECT string_agg(format(', %s AS %I', e, kinds[i]), '' ORDER BY i) FROM unnest(exprs) WITH ORDINALITY u(e, i)),
                       attach_shards.source || '_silver',
                       (SELECT string_agg(format(', %I', f), '' ORDER BY i) FROM unnest(g.grain) WITH ORDINALITY u(f, i) WHERE f <> 'business_date'));
        views := views || gview;
    END LOOP;
    UPDATE kafka_lake.shards x SET gold_views = views WHERE x.source = attach_shards.source;
END
$fn$;
COMMENT ON FUNCTION kafka_lake.attach_shards(text, text[], text) IS
  'On a coordinator: read a source landed by several servers (postgres_fdw servers) as one: kafka_lake.<source>_records, _events and _silver over every shard';
REVOKE ALL ON FUNCTION kafka_lake.attach_shards(text, text[], text) FROM PUBLIC;

CREATE FUNCTION kafka_lake.detach_shards(source text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    s   record;
    rel text;
BEGIN
    IF detach_shards.source IS NULL THEN
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = '22004', HINT = 'Name a source of kafka_lake.shards.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM kafka_lake.shards x WHERE x.source = detach_shards.source) THEN
        RAISE EXCEPTION 'source "%" has no shards attached here', detach_shards.source
            USING ERRCODE = '42704', HINT = 'kafka_lake.shards lists the attached sources.';
    END IF;
    FOREACH rel IN ARRAY coalesce((SELECT x.gold_views FROM kafka_lake.shards x
                                    WHERE x.source = detach_shards.source AND x.shard_number = 1), '{}') LOOP
        EXECUTE format('DROP VIEW IF EXISTS kafka_lake.%I', rel);
    END LOOP;
    FOREACH rel IN ARRAY ARRAY['records', 'events', 'silver'] LOOP
        EXECUTE format('DROP VIEW IF EXISTS kafka_lake.%I', detach_shards.source || '_' || rel);
    END LOOP;
    FOR s IN SELECT * FROM kafka_lake.shards x WHERE x.source = detach_shards.source LOOP
        FOREACH rel IN ARRAY kafka_lake.shard_relations(s.source, s.shard_number) LOOP
            EXECUTE format('DROP FOREIGN TABLE IF EXISTS kafka_lake.%I', rel);
        END LOOP;
    END LOOP;
    DELETE FROM kafka_lake.shards x WHERE x.source = detach_shards.source;
END
$fn$;
COMMENT ON FUNCTION kafka_lake.detach_shards(text) IS
  'On a coordinator: forget a source''s shards and its views (its certificates stay)';
REVOKE ALL ON FUNCTION kafka_lake.detach_shards(text) FROM PUBLIC;

-- shard_partitions(): per partition of the topic, the shards that own it now
CREATE FUNCTION kafka_lake.shard_partitions(
    source text,
    OUT topic text, OUT partition integer, OUT owners text[], OUT status text)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    s      record;
    parts  text[] := '{}';
    owns   text[] := '{}';
BEGIN
    IF shard_partitions.source IS NULL THEN
        RAISE EXCEPTION 'source must not be null' USING ERRCODE = '22004', HINT = 'Name a source of kafka_lake.shards.';
    END IF;
    FOR s IN SELECT * FROM kafka_lake.shards x WHERE x.source = shard_partitions.source ORDER BY x.shard_number LOOP
        -- the partitions a shard knows of: those it landed, and those its certificates list
        -- (every partition of the topic at the closing)
        parts := parts || format('SELECT b.topic, b.partition FROM kafka_lake.%I b WHERE b.source_id = %s'
                                 ' UNION SELECT cp.topic, cp.partition FROM kafka_lake.%I cp JOIN kafka_lake.%I c USING (closing_id) WHERE c.source_id = %s',
                                 format('%s_s%s_batches', s.source, s.shard_number), s.remote_source_id,
                                 format('%s_s%s_closing_partitions', s.source, s.shard_number),
                                 format('%s_s%s_closings', s.source, s.shard_number), s.remote_source_id);
        owns := owns || format('SELECT %L::text AS shard, %s AS shard_number, x.partitions FROM kafka_lake.%I x WHERE x.source_id = %s',
                               s.shard, s.shard_number, format('%s_s%s_sources', s.source, s.shard_number), s.remote_source_id);
    END LOOP;
    IF cardinality(owns) = 0 THEN
        RAISE EXCEPTION 'source "%" has no shards attached here', shard_partitions.source
            USING ERRCODE = '42704', HINT = 'Attach them with kafka_lake.attach_shards().';
    END IF;
    RETURN QUERY EXECUTE format(
        'WITH p AS (%s), o AS (%s)'
        ' SELECT p.topic, p.partition, array_agg(o.shard ORDER BY o.shard_number) FILTER (WHERE o.shard IS NOT NULL),'
        '        CASE count(o.shard) WHEN 0 THEN ''unowned'' WHEN 1 THEN ''owned'' ELSE ''overlap'' END'
        '   FROM (SELECT DISTINCT topic, partition FROM p) p'
        '   LEFT JOIN o ON o.partitions IS NULL OR p.partition = ANY (o.partitions)'
        '  GROUP BY p.topic, p.partition ORDER BY p.topic, p.partition',
        array_to_string(parts, ' UNION '), array_to_string(owns, ' UNION ALL '));
END
$fn$;
COMMENT ON FUNCTION kafka_lake.shard_partitions(text) IS
  'On a coordinator: per partition of the source''s topics, the shards that own it now (owned, unowned, overlap)';
REVOKE ALL ON FUNCTION kafka_lake.shard_partitions(text) FROM PUBLIC;

-- certify_shards(): one certificate of a date across every shard.  Each shard
-- must have closed the date (its certificate in effect, status closed); every
-- partition its certificates list must have been owned by exactly one of them
-- at its closing; no two shards may hold batches of the date at the same
-- coordinates.  The combined source_hash is the SHA-256 of the shards'
-- source_hash values, sorted, each followed by a newline: the same whatever
-- the shards are called or the order they were attached in.
CREATE FUNCTION kafka_lake.certify_shards(
    source        text,
    business_date date,
    OUT shard           text,
    OUT closing_id      bigint,
    OUT snapshot_id     bigint,
    OUT source_hash     text,
    OUT selected_events integer,
    OUT partitions      integer[],
    OUT certificate_id  bigint,
    OUT combined_hash   text,
    OUT status          text)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    d       date := certify_shards.business_date;
    src     text := certify_shards.source;
    s       record;
    c       record;
    certs   jsonb := '[]';
    cps     text[] := '{}';
    bs      text[] := '{}';
    bad     record;
    hash    text;
    total   bigint;
    prior   record;
    cert_id bigint;
    outcome text;
    msg     text;
    det     text;
    state   text;
    gv      text;
    grows   bigint;
    gsum    text;
    golds   jsonb := '{}';
    nk      text[];
BEGIN
    IF src IS NULL OR d IS NULL THEN
        RAISE EXCEPTION 'source and business_date must not be null'
            USING ERRCODE = '22004', HINT = 'Name an attached source and a date its shards closed.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM kafka_lake.shards x WHERE x.source = src) THEN
        RAISE EXCEPTION 'source "%" has no shards attached here', src
            USING ERRCODE = '42704', HINT = 'Attach them with kafka_lake.attach_shards().';
    END IF;
    -- the same date on every shard under one lock: two certifications of it wait for each other
    PERFORM pg_advisory_xact_lock(hashtext('kafka_lake.certify_shards'), hashtext(src || '/' || d));

    FOR s IN SELECT * FROM kafka_lake.shards x WHERE x.source = src ORDER BY x.shard_number LOOP
        BEGIN
            EXECUTE format('SELECT c.closing_id, c.snapshot_id, c.source_hash, c.selected_events, c.status,'
                           '       (SELECT array_agg(cp.partition ORDER BY cp.partition) FROM kafka_lake.%I cp'
                           '         WHERE cp.closing_id = c.closing_id AND cp.owned) AS owned'
                           '  FROM kafka_lake.%I c WHERE c.source_id = $1 AND c.business_date = $2 AND c.status <> ''superseded''',
                           format('%s_s%s_closing_partitions', s.source, s.shard_number),
                           format('%s_s%s_closings', s.source, s.shard_number))
                INTO c USING s.remote_source_id, d;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
            IF left(state, 2) = '08' OR state = '57P01' THEN
                RAISE EXCEPTION 'shard "%" of source "%" does not answer', s.shard, src
                    USING ERRCODE = '08006', DETAIL = msg || coalesce(' ' || det, '') || ' Nothing was certified.',
                          HINT = format('Certify date %s again once server %s answers.', d, s.shard);
            END IF;
            RAISE;
        END;
        IF c.closing_id IS NULL OR c.status <> 'closed' THEN
            RAISE EXCEPTION 'date % of source "%" was not certified: shard "%" has not closed it', d, src, s.shard
                USING ERRCODE = '55000',
                      DETAIL = CASE WHEN c.closing_id IS NULL THEN 'The shard has no certificate of the date.'
                                    ELSE format('The shard''s certificate %s is %s.', c.closing_id, c.status) END,
                      HINT = format('Run kafka_lake.close_date(%L, %L) on shard %s, then certify again.', s.remote_source, d, s.shard);
        END IF;
        certs := certs || jsonb_build_object('shard', s.shard, 'closing_id', c.closing_id, 'snapshot_id', c.snapshot_id,
                                             'source_hash', c.source_hash, 'selected_events', c.selected_events,
                                             'partitions', to_jsonb(coalesce(c.owned, '{}')));
        cps := cps || format('SELECT %L::text AS shard, %s AS n, cp.topic, cp.partition, cp.owned FROM kafka_lake.%I cp WHERE cp.closing_id = %s',
                             s.shard, s.shard_number, format('%s_s%s_closing_partitions', s.source, s.shard_number), c.closing_id);
        bs := bs || format('SELECT %L::text AS shard, %s AS n, b.topic, b.partition, b.first_offset, b.last_offset FROM kafka_lake.%I b'
                           ' WHERE b.source_id = %s AND b.min_business_date <= %L AND b.max_business_date >= %L',
                           s.shard, s.shard_number, format('%s_s%s_batches', s.source, s.shard_number), s.remote_source_id, d, d);
    END LOOP;

    -- every partition owned by exactly one shard at its closing
    EXECUTE format('SELECT topic, partition, array_agg(shard ORDER BY n) FILTER (WHERE owned) AS owners'
                   '  FROM (%s) cp GROUP BY topic, partition'
                   ' HAVING count(*) FILTER (WHERE owned) <> 1 ORDER BY topic, partition LIMIT 1',
                   array_to_string(cps, ' UNION ALL ')) INTO bad;
    IF bad.topic IS NOT NULL THEN
        RAISE EXCEPTION 'date % of source "%" was not certified: partition % of topic "%" %', d, src, bad.partition, bad.topic,
                        CASE WHEN bad.owners IS NULL THEN 'has no owner' ELSE 'has two owners' END
            USING ERRCODE = '55000',
                  DETAIL = CASE WHEN bad.owners IS NULL
                                THEN 'No shard owned the partition when it closed the date: its records of the date are in no certificate.'
                                ELSE format('Shards %s each owned it when they closed the date.', array_to_string(bad.owners, ', ')) END,
                  HINT = 'Give each partition one owner (kafka_lake.set_partitions() on each shard), close the date again where it changed, then certify.';
    END IF;
    -- no coordinate of the date landed by two shards
    EXECUTE format('WITH b AS (%s)'
                   ' SELECT x.shard AS a, y.shard AS b, x.topic, x.partition,'
                   '        greatest(x.first_offset, y.first_offset) AS lo, least(x.last_offset, y.last_offset) AS hi'
                   '   FROM b x JOIN b y ON x.topic = y.topic AND x.partition = y.partition AND x.n < y.n'
                   '    AND x.first_offset <= y.last_offset AND y.first_offset <= x.last_offset'
                   '  ORDER BY x.topic, x.partition, lo LIMIT 1',
                   array_to_string(bs, ' UNION ALL ')) INTO bad;
    IF bad.topic IS NOT NULL THEN
        RAISE EXCEPTION 'date % of source "%" was not certified: shards "%" and "%" both landed offsets % to % of partition % of topic "%"',
                        d, src, bad.a, bad.b, bad.lo, bad.hi, bad.partition, bad.topic
            USING ERRCODE = '55000',
                  DETAIL = 'Two servers landed the same records: their golds count them twice.',
                  HINT = 'Give each partition one owner, with one consumer group for every shard of the topic; drop the copy on one shard (exclude() its records there) and close the date again.';
    END IF;

    -- no event_id of the date accepted by two shards (one server accepts it once)
    EXECUTE format('SELECT r.event_id, array_agg(DISTINCT r.shard ORDER BY r.shard) AS owners FROM kafka_lake.%I r'
                   ' WHERE r.business_date = $1 AND r.status = ''accepted'' AND r.event_id IS NOT NULL'
                   ' GROUP BY r.event_id HAVING count(DISTINCT r.shard) > 1 ORDER BY r.event_id LIMIT 1',
                   src || '_records') INTO bad USING d;
    IF bad.event_id IS NOT NULL THEN
        RAISE EXCEPTION 'date % of source "%" was not certified: event_id "%" is accepted by shards %', d, src, bad.event_id,
                        array_to_string(bad.owners, ' and ')
            USING ERRCODE = '55000',
                  DETAIL = 'One server accepts an event_id once; the combined gold would count it on each shard.',
                  HINT = 'Exclude the copy on one shard (kafka_lake.exclude()), close the date again there, then certify.';
    END IF;
    -- no natural key of the date in two shards' silver (one server's silver keeps it once)
    SELECT x.* INTO s FROM kafka_lake.shards x WHERE x.source = src AND x.shard_number = 1;
    EXECUTE format('SELECT ARRAY(SELECT json_array_elements_text(c.definition->''natural_key''))'
                   '  FROM kafka_lake.%I c JOIN kafka_lake.%I o ON o.contract = c.contract AND o.contract_version = c.version'
                   ' WHERE o.source_id = %s',
                   format('%s_s1_contracts', src), format('%s_s1_sources', src), s.remote_source_id) INTO nk;
    IF cardinality(nk) > 0 AND NOT EXISTS (
           SELECT 1 FROM unnest(nk) f
            WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a
                               WHERE a.attrelid = to_regclass(format('kafka_lake.%I', src || '_silver'))
                                 AND a.attname = f AND NOT a.attisdropped)) THEN
        EXECUTE format('SELECT row(%1$s)::text AS key, array_agg(DISTINCT r.shard ORDER BY r.shard) AS owners FROM kafka_lake.%2$I r'
                       ' WHERE r.business_date = $1 GROUP BY %1$s HAVING count(DISTINCT r.shard) > 1 ORDER BY 1 LIMIT 1',
                       (SELECT string_agg(format('r.%I', f), ', ' ORDER BY i) FROM unnest(nk) WITH ORDINALITY u(f, i)),
                       src || '_silver') INTO bad USING d;
        IF bad.key IS NOT NULL THEN
            RAISE EXCEPTION 'date % of source "%" was not certified: natural key (%) = % is in the silver of shards %', d, src,
                            array_to_string(nk, ', '), bad.key, array_to_string(bad.owners, ' and ')
                USING ERRCODE = '55000',
                      DETAIL = 'One server''s silver keeps one event per natural key; the combined gold would count it on each shard.',
                      HINT = 'Exclude the copy on one shard (kafka_lake.exclude()), close the date again there, then certify.';
        END IF;
    END IF;
    -- what the combined golds hold for the date, pinned by the certificate
    FOR gv IN SELECT unnest(x.gold_views) FROM kafka_lake.shards x WHERE x.source = src AND x.shard_number = 1 LOOP
        EXECUTE format('SELECT count(*), coalesce(md5(string_agg(g::text, E''\n'' ORDER BY g::text)), md5(''''))'
                       '  FROM kafka_lake.%I g WHERE g.business_date = $1', gv) INTO grows, gsum USING d;
        golds := golds || jsonb_build_object(gv, jsonb_build_object('rows', grows, 'md5', gsum));
    END LOOP;

    SELECT encode(sha256(convert_to(string_agg(e->>'source_hash' || E'\n', '' ORDER BY e->>'source_hash' COLLATE "C"), 'UTF8')), 'hex'),
           sum((e->>'selected_events')::bigint)
      INTO hash, total FROM jsonb_array_elements(certs) e;
    SELECT * INTO prior FROM kafka_lake.shard_certificates x
     WHERE x.source = src AND x.business_date = d AND x.status = 'certified';
    certs := jsonb_build_object('shards', certs, 'golds', golds);
    IF prior.certificate_id IS NOT NULL AND prior.combined_hash = hash AND prior.shards = certs THEN
        cert_id := prior.certificate_id;
        outcome := 'unchanged';
    ELSE
        UPDATE kafka_lake.shard_certificates x SET status = 'superseded'
         WHERE x.source = src AND x.business_date = d AND x.status = 'certified';
        INSERT INTO kafka_lake.shard_certificates (source, business_date, combined_hash, selected_events, shards, status)
        VALUES (src, d, hash, total, certs, 'certified') RETURNING shard_certificates.certificate_id INTO cert_id;
        outcome := 'certified';
    END IF;
    FOR c IN SELECT e FROM jsonb_array_elements(certs->'shards') e LOOP
        shard := c.e->>'shard';
        closing_id := (c.e->>'closing_id')::bigint;
        snapshot_id := (c.e->>'snapshot_id')::bigint;
        source_hash := c.e->>'source_hash';
        selected_events := (c.e->>'selected_events')::integer;
        partitions := ARRAY(SELECT jsonb_array_elements_text(c.e->'partitions')::integer);
        certificate_id := cert_id;
        combined_hash := hash;
        status := outcome;
        RETURN NEXT;
    END LOOP;
END
$fn$;
COMMENT ON FUNCTION kafka_lake.certify_shards(text, date) IS
  'On a coordinator: certify a business date across every shard of a source (each closed it, each partition owned once, no record landed twice) with one combined source_hash';
REVOKE ALL ON FUNCTION kafka_lake.certify_shards(text, date) FROM PUBLIC;
