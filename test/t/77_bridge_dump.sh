#!/usr/bin/env bash
# test/t/77_bridge_dump.sh: pg_dump keeps a source's silver and golds.  A source of a contract
# that is not machine events, with a declared gold, a SQL gold defined by a plain role and a
# check, bridged; dumped and restored into a new database: the silver table (its definition,
# its rows), the gold tables and their views, as-of and compute functions (owned by the
# role that defined them, SECURITY DEFINER), the definitions in kafka_lake.golds and
# kafka_lake.quality_checks; and the restored database, once it has claimed a copy of the
# landing (claim_landing, with a consumer group of its own: the original goes on using its
# own), bridges the next date the same way.  Before the claim it refuses to write in the
# original's landing.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 10
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
topic=bridge.dump.t

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_bdump_source" \
	-c "DROP DATABASE IF EXISTS kl_bdump_restored" -c "DROP ROLE IF EXISTS t77_owner" \
	-c "CREATE ROLE t77_owner" \
	-c "CREATE DATABASE kl_bdump_source" -c "CREATE DATABASE kl_bdump_restored" >/dev/null
q -d kl_bdump_source -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
q -d kl_bdump_source >/dev/null <<SQL
CREATE SERVER bd_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_contract('visits77', '{
  "type": "object",
  "properties": {"visit_id": {"type": "string"}, "day": {"type": "string", "format": "date"},
                 "page": {"type": "string"}, "ms": {"type": "integer", "minimum": 0},
                 "tags": {"type": "array", "items": {"type": "string"}}},
  "required": ["visit_id", "day", "page", "ms"],
  "event_id": "visit_id", "business_date": {"field": "day"}, "natural_key": ["visit_id"]}');
SELECT kafka_lake.create_source('bd_src', 'bd_srv', '$topic', contract => 'visits77');
GRANT USAGE ON SCHEMA kafka_lake TO t77_owner;
GRANT SELECT, TRIGGER ON kafka_lake.bd_src_records TO t77_owner;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO t77_owner;
SELECT kafka_lake.define_gold('bd_src', 'bd_pages', ARRAY['page'],
  '{"visits": {"count": "*"}, "ms": {"sum": "ms"}, "avg_ms": {"avg": "ms", "round": 1}}');
SET ROLE t77_owner;
SELECT kafka_lake.define_gold('bd_src', 'bd_tags', ARRAY[]::text[],
  sql => 'SELECT count(*) FILTER (WHERE tags IS NOT NULL) AS tagged, current_user::text AS who FROM silver');
RESET ROLE;
SELECT kafka_lake.add_check('bd_src', 'no_slow', 'SELECT visit_id FROM silver WHERE ms > 100000');
SELECT kafka_lake.produce('bd_srv', '$topic', convert_to(format(
         '{"visit_id": "v%s", "day": "2026-08-0%s", "page": "/p%s", "ms": %s, "tags": ["a", "b,c"]}',
         i, 1 + i % 2, i % 3, i * 10), 'UTF8'))
  FROM generate_series(1, 6) i;
SELECT * FROM kafka_lake.land('bd_src');
SELECT * FROM kafka_lake.bridge('bd_src', '2026-08-01');
SQL
state() {
	q -d "$1" -c "SELECT md5(string_agg(s::text, ',' ORDER BY s::text)) FROM kafka_lake.bd_src_silver s" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.bd_pages_current g" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.bd_tags_current g" \
	  -c "SELECT string_agg(gold || ':' || owner || ':' || coalesce(compute, '-'), ',' ORDER BY gold) FROM kafka_lake.golds" \
	  -c "SELECT string_agg(check_name || ':' || function, ',') FROM kafka_lake.quality_checks" \
	  -c "SELECT string_agg(p.oid::regprocedure::text || ':' || pg_get_userbyid(p.proowner) || ':' || p.prosecdef, ',' ORDER BY p.oid::regprocedure::text)
	        FROM pg_proc p WHERE p.pronamespace = 'kafka_lake'::regnamespace AND p.proname LIKE 'bd_%'"
}
is "$(q -d kl_bdump_source -c "SELECT who || ' ' || tagged FROM kafka_lake.bd_tags_current")" "t77_owner 3" \
	"the date is bridged, the SQL gold ran as its owner"
before=$(state kl_bdump_source)
ok "pg_dump -d kl_bdump_source -f '$KL_TMP/bdump.sql' 2>'$KL_TMP/bdump.err'" "pg_dump dumps it"
ok "psql -X -q -v ON_ERROR_STOP=1 -d kl_bdump_restored -f '$KL_TMP/bdump.sql' >/dev/null 2>'$KL_TMP/brestore.err'" \
	"the dump restores into a new database"
[ -s "$KL_TMP/brestore.err" ] && diag "$(cat "$KL_TMP/brestore.err")"
is "$(state kl_bdump_restored)" "$before" \
	"silver, both golds, their definitions, the check and the functions (owner, SECURITY DEFINER) are the same"
is "$(q -d kl_bdump_restored -c "SELECT count(*) FROM pg_depend d WHERE d.refclassid = 'pg_extension'::regclass
        AND d.objid IN ('kafka_lake.bd_src_silver'::regclass, 'kafka_lake.bd_pages'::regclass, 'kafka_lake.bd_tags'::regclass)")" \
	"0" "they are no members of the extension"
err=$(q -d kl_bdump_restored -c "SELECT * FROM kafka_lake.bridge('bd_src', '2026-08-02')" 2>&1 >/dev/null)
like "$err" "is not this database's" "before it claims a landing, the restored database does not write in the original's"
landing=$(q -d kl_bdump_source -c "SELECT current_setting('data_directory') || '/kafka_lake/bd_src'")
mkdir -p "$KL_TMP/copy77"
cp -a "$landing" "$KL_TMP/copy77/"
chown -R postgres: "$KL_TMP/copy77"
is "$(q -d kl_bdump_restored -c "SELECT status || ' ' || group_id FROM kafka_lake.claim_landing('bd_src',
        landing_dir => '$KL_TMP/copy77', group_id => 'kl_bdump_restored.bd_src')")" \
	"claimed kl_bdump_restored.bd_src" "it claims a copy of the landing, with a consumer group of its own"
is "$(q -d kl_bdump_restored -c "SELECT run_status || ' ' || quality_passed || '/' || quality_total || ' ' || gold_rows
        FROM kafka_lake.bridge('bd_src', '2026-08-02')")" "processed 8/8 4" \
	"the restored database bridges the next date: silver, both golds, the check"
is "$(q -d kl_bdump_restored -c "SELECT string_agg(page || '=' || visits, ',' ORDER BY page) FROM kafka_lake.bd_pages_current WHERE business_date = '2026-08-02'")" \
	"/p0=1,/p1=1,/p2=1" "with the declared gold's rows"
is "$(q -d kl_bdump_restored -c "SELECT who FROM kafka_lake.bd_tags_current WHERE business_date = '2026-08-02'")" \
	"t77_owner" "and the SQL gold still runs as its owner"

q -d postgres -c "DROP DATABASE kl_bdump_restored" -c "DROP DATABASE kl_bdump_source" >/dev/null
q -d postgres -c "DROP ROLE t77_owner" >/dev/null
