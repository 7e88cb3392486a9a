/* sql/kafka_lake--1.11--1.12.sql
 *
 * Upgrade of kafka_lake 1.11 to 1.12.  The scripts up to 1.11 are released
 * and never change: every catalog or function change of 1.12 is made here, so
 * that a database created at an earlier version and one created at 1.12 end
 * with the same objects (test/t/99h_upgrade_1_12.sh checks the path).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kafka_lake UPDATE TO '1.12'" to load this file. \quit

-- An empty share: a server that owns some of a topic's partitions
-- (set_partitions) may have no event of a date, and certifies that as any
-- other share: close_date() lands to the marks and records a certificate of
-- none (selected_events 0, a closed snapshot with no gold rows), so that a
-- coordinator can certify the date across every shard.  A source that lands
-- every partition still refuses a date without events (P0002): there it is
-- more likely a mistaken date than a quiet day.
ALTER TABLE kafka_lake.date_closings DROP CONSTRAINT date_closings_selected_events_check;
ALTER TABLE kafka_lake.date_closings ADD CONSTRAINT date_closings_events_check CHECK (selected_events >= 0);

-- SQL golds across shards
--
-- A coordinator (attach_shards) combined declared golds only.  An owner's SQL
-- gold is user code: attach_shards() now combines it when its owner is a
-- role of the coordinator too (the same name, the same SQL on every shard)
-- and no superuser there (the SQL comes from the shards' catalogs):
-- a function kafka_lake.<source>_<gold>_combine(business_date text) owned by
-- that role (SECURITY DEFINER, search_path pinned) runs the gold's SQL over
-- every shard's silver of the date, and the view kafka_lake.<source>_<gold>
-- reads it through shard_gold(), which runs it only while the function is as
-- attach_shards() made it, as that role, security-restricted
-- (src/close/shard_gold.c).  kafka_lake.shards.sql_golds records each
-- combined SQL gold's owner.
ALTER TABLE kafka_lake.shards ADD COLUMN sql_golds jsonb NOT NULL DEFAULT '{}';
COMMENT ON COLUMN kafka_lake.shards.sql_golds IS
  'The SQL golds combined here, each with the role whose rights its SQL runs with (the same on each row)';

-- What a combined SQL gold's view reads: the caller must have SELECT on the view, so PUBLIC may
-- execute it.
CREATE FUNCTION kafka_lake.shard_gold(source text, gold text, business_date date)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kafka_lake_shard_gold'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kafka_lake.shard_gold(text, text, date) IS
  'On a coordinator: the rows of a combined SQL gold of a date, computed with the rights of its owner (the view kafka_lake.<source>_<gold> reads it)';

CREATE OR REPLACE FUNCTION kafka_lake.attach_shards(
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
    sqlg     jsonb := '{}';
    cols     text;
    casts    text;
    scols    text;
    fn       text;
    bodies   text := current_setting('check_function_bodies');
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
    FOR g IN EXECUTE format('SELECT g.gold, g.grain, g.metrics::text AS metrics, g.sql IS NOT NULL AS is_sql, g.sql, g.owner::text AS owner FROM kafka_lake.%I g'
                            ' WHERE g.source_id = %s OR (g.builtin AND %L = ''silver_machine_events'') ORDER BY g.gold',
                            attach_shards.source || '_s1_golds',
                            (SELECT x.remote_source_id FROM kafka_lake.shards x WHERE x.source = attach_shards.source AND x.shard_number = 1),
                            (SELECT x.silver_table FROM kafka_lake.shards x WHERE x.source = attach_shards.source AND x.shard_number = 1)) LOOP
        FOR k IN 2 .. n LOOP
            EXECUTE format('SELECT count(*) FROM kafka_lake.%I g WHERE g.gold = $1 AND g.grain = $2 AND g.metrics::text IS NOT DISTINCT FROM $3'
                           ' AND g.sql IS NOT DISTINCT FROM $4 AND (g.sql IS NULL OR g.owner::text = $5)',
                           format('%s_s%s_golds', attach_shards.source, k))
                INTO made USING g.gold, g.grain, g.metrics, g.sql, g.owner;
            IF made <> 1 THEN
                RAISE EXCEPTION 'gold "%" of source "%" is not defined alike on every shard', g.gold, attach_shards.source
                    USING ERRCODE = '55000', DETAIL = format('Shard %s defines it otherwise, or not at all.', attach_shards.shards[k]),
                          HINT = 'Define the gold with the same grain and metrics (a SQL gold: the same SQL, by the same role) on every shard, then attach again.';
            END IF;
        END LOOP;
        gview := attach_shards.source || '_' || g.gold;
        IF octet_length(gview || '_combine') > 63 OR to_regclass(format('kafka_lake.%I', gview)) IS NOT NULL THEN
            RAISE EXCEPTION 'gold "%" of source "%" cannot be combined here: kafka_lake.% %', g.gold, attach_shards.source,
                            quote_ident(gview), CASE WHEN octet_length(gview || '_combine') > 63 THEN 'is too long a name' ELSE 'exists' END
                USING ERRCODE = '42P07', HINT = 'Attach the source under a shorter name (remote_source => its name on the shards).';
        END IF;
        IF g.is_sql THEN
            -- an owner's SQL gold: its SQL again over every shard's silver, with the rights of the
            -- role of its owner's name here (shard_gold, src/close/shard_gold.c), never the caller's
            IF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = g.owner) THEN
                RAISE NOTICE 'SQL gold "%" of source "%" is not combined here: its owner "%" is no role of this database',
                             g.gold, attach_shards.source, g.owner
                    USING HINT = format('Its SQL runs with its owner''s rights: CREATE ROLE %I here, then attach again; kafka_lake.%I holds the rows it reads.',
                                        g.owner, attach_shards.source || '_silver');
                CONTINUE;
            END IF;
            -- the SQL comes from the shards' catalog: whoever controls a shard's catalog must not
            -- get a superuser's rights here through it
            IF (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = g.owner) THEN
                RAISE NOTICE 'SQL gold "%" of source "%" is not combined here: its owner "%" is a superuser of this database',
                             g.gold, attach_shards.source, g.owner
                    USING HINT = format('A combined SQL gold runs with its owner''s rights; define it on the shards as a role that is no superuser here. kafka_lake.%I holds the rows it reads.',
                                        attach_shards.source || '_silver');
                CONTINUE;
            END IF;
            fn := gview || '_combine';
            IF to_regprocedure(format('kafka_lake.%I(text)', fn)) IS NOT NULL THEN
                RAISE EXCEPTION 'gold "%" of source "%" cannot be combined here: kafka_lake.%(text) exists', g.gold, attach_shards.source, quote_ident(fn)
                    USING ERRCODE = '42P07', HINT = 'Attach the source under another name (remote_source => its name on the shards).';
            END IF;
            -- the gold's columns as the shard's table has them, and silver's as the shard's silver has them
            EXECUTE format('CREATE SCHEMA %I', staging);
            EXECUTE format('IMPORT FOREIGN SCHEMA kafka_lake LIMIT TO (%I) FROM SERVER %I INTO %I', g.gold, attach_shards.shards[1], staging);
            SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum),
                   string_agg(format('q.%I::%s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
              INTO cols, casts
              FROM pg_attribute a
             WHERE a.attrelid = to_regclass(format('%I.%I', staging, g.gold)) AND a.attnum > 0 AND NOT a.attisdropped
               AND a.attname NOT IN ('snapshot_id', 'business_date', 'closing_status');
            IF to_regclass(format('%I.%I', staging, g.gold)) IS NOT NULL THEN
                EXECUTE format('DROP FOREIGN TABLE %I.%I', staging, g.gold);
            END IF;
            EXECUTE format('DROP SCHEMA %I', staging);
            IF cols IS NULL THEN
                RAISE EXCEPTION 'shard "%" has no table kafka_lake.% of its SQL gold', attach_shards.shards[1], quote_ident(g.gold)
                    USING ERRCODE = '42P01', HINT = 'A gold''s table is made by define_gold() on the shard.';
            END IF;
            SELECT string_agg(format('s.%I', a.attname), ', ' ORDER BY a.attnum) INTO scols
              FROM pg_attribute a
             WHERE a.attrelid = to_regclass(format('kafka_lake.%I', attach_shards.source || '_s1_silver'))
               AND a.attnum > 0 AND NOT a.attisdropped;
            -- the body is the owner's SQL: not even parsed with the rights of whoever attaches
            -- (it ran on the shards; it is checked when it first runs, as its owner)
            PERFORM set_config('check_function_bodies', 'off', true);
            EXECUTE format('CREATE FUNCTION kafka_lake.%I(text) RETURNS TABLE (%s) LANGUAGE sql VOLATILE SECURITY DEFINER'
                           ' SET search_path = pg_catalog, pg_temp AS %L',
                           fn, cols,
                           format('WITH silver AS (SELECT %s FROM kafka_lake.%I s WHERE s.business_date = $1::pg_catalog.date)'
                                  ' SELECT %s FROM (%s' || E'\n' || ') q',
                                  scols, attach_shards.source || '_silver', casts, g.sql));
            PERFORM set_config('check_function_bodies', bodies, true);
            EXECUTE format('REVOKE ALL ON FUNCTION kafka_lake.%I(text) FROM PUBLIC', fn);
            EXECUTE format('COMMENT ON FUNCTION kafka_lake.%I(text) IS %L', fn,
                           format('On a coordinator: SQL gold %s of source %s over every shard''s silver of a date, with the rights of %s',
                                  g.gold, attach_shards.source, g.owner));
            EXECUTE format('ALTER FUNCTION kafka_lake.%I(text) OWNER TO %I', fn, g.owner);
            EXECUTE format('GRANT USAGE ON SCHEMA kafka_lake TO %I', g.owner);
            EXECUTE format('GRANT SELECT ON kafka_lake.%I TO %I', attach_shards.source || '_silver', g.owner);
            EXECUTE format('CREATE VIEW kafka_lake.%I AS SELECT d.business_date, g.*'
                           '  FROM (SELECT DISTINCT s.business_date FROM kafka_lake.%I s) d'
                           ' CROSS JOIN LATERAL kafka_lake.shard_gold(%L, %L, d.business_date) AS g(%s)',
                           gview, attach_shards.source || '_silver', attach_shards.source, g.gold, cols);
            views := views || gview;
            sqlg := sqlg || jsonb_build_object(g.gold, g.owner);
            CONTINUE;
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
    UPDATE kafka_lake.shards x SET gold_views = views, sql_golds = sqlg WHERE x.source = attach_shards.source;
END
$fn$;
COMMENT ON FUNCTION kafka_lake.attach_shards(text, text[], text) IS
  'On a coordinator: read a source landed by several servers (postgres_fdw servers) as one: kafka_lake.<source>_records, _events and _silver over every shard';
REVOKE ALL ON FUNCTION kafka_lake.attach_shards(text, text[], text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION kafka_lake.detach_shards(source text)
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
    -- a combined SQL gold's function (its owner's)
    FOR rel IN SELECT k FROM kafka_lake.shards x, jsonb_object_keys(x.sql_golds) k
                WHERE x.source = detach_shards.source AND x.shard_number = 1 LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS kafka_lake.%I(text)', detach_shards.source || '_' || rel || '_combine');
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
