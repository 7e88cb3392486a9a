#!/usr/bin/env bash
# test/t/94_golds_dump.sh: pg_dump keeps the versions of golds and checks.  A source with a
# declared gold defined twice (version 2 current), a SQL gold of a plain role dropped after
# it published (its table and <gold>_as_of() keep the rows), and a check defined twice,
# bridged and rechecked; dumped and restored into a new database: gold_definitions,
# check_definitions and snapshot_definitions are the same, the dropped gold's rows still
# read through its as-of function, and the restored catalog defines the gold again as
# version 3.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 7
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
topic=golds.dump.t

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_gdump_source" \
	-c "DROP DATABASE IF EXISTS kl_gdump_restored" -c "DROP ROLE IF EXISTS t94_owner" \
	-c "CREATE ROLE t94_owner" \
	-c "CREATE DATABASE kl_gdump_source" -c "CREATE DATABASE kl_gdump_restored" >/dev/null
q -d kl_gdump_source -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
q -d kl_gdump_source >/dev/null <<SQL
CREATE SERVER gd_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_contract('visits94', '{
  "type": "object",
  "properties": {"visit_id": {"type": "string"}, "day": {"type": "string", "format": "date"},
                 "page": {"type": "string"}, "ms": {"type": "integer", "minimum": 0}},
  "required": ["visit_id", "day", "page", "ms"],
  "event_id": "visit_id", "business_date": {"field": "day"}, "natural_key": ["visit_id"]}');
SELECT kafka_lake.create_source('gd_src', 'gd_srv', '$topic', contract => 'visits94');
GRANT USAGE ON SCHEMA kafka_lake TO t94_owner;
GRANT SELECT, TRIGGER ON kafka_lake.gd_src_records TO t94_owner;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO t94_owner;
SELECT kafka_lake.define_gold('gd_src', 'gd_pages', ARRAY['page'], '{"visits": {"count": "*"}, "ms": {"sum": "ms"}}');
SET ROLE t94_owner;
SELECT kafka_lake.define_gold('gd_src', 'gd_total', ARRAY[]::text[],
  sql => 'SELECT count(*) AS visits, current_user::text AS who FROM silver');
RESET ROLE;
SELECT kafka_lake.add_check('gd_src', 'no_slow', 'SELECT visit_id FROM silver WHERE ms > 100000');
SELECT kafka_lake.produce('gd_srv', '$topic', convert_to(format(
         '{"visit_id": "v%s", "day": "2026-08-01", "page": "/p%s", "ms": %s}', i, i % 2, i * 10), 'UTF8'))
  FROM generate_series(1, 4) i;
SELECT * FROM kafka_lake.land('gd_src');
SELECT * FROM kafka_lake.bridge('gd_src', '2026-08-01');
SELECT kafka_lake.define_gold('gd_src', 'gd_pages', ARRAY['page'], '{"visits": {"count": "*"}, "ms": {"max": "ms"}}');
SELECT kafka_lake.add_check('gd_src', 'no_slow', 'SELECT visit_id FROM silver WHERE ms > 50000');
SELECT kafka_lake.drop_gold('gd_src', 'gd_total');
SELECT * FROM kafka_lake.bridge('gd_src', '2026-08-01', recheck => true);
SQL
state() {
	q -d "$1" -c "SELECT string_agg(gold || ':' || version || ':' || owner || ':' || coalesce(ended_by, 'current') || ':' || coalesce(metrics::text, sql), ',' ORDER BY gold, version) FROM kafka_lake.gold_definitions WHERE NOT builtin" \
	  -c "SELECT string_agg(check_name || ':' || version || ':' || coalesce(ended_by, 'current') || ':' || sql, ',' ORDER BY check_name, version) FROM kafka_lake.check_definitions" \
	  -c "SELECT string_agg(snapshot_id || ':' || kind || ':' || name || ':' || version, ',' ORDER BY snapshot_id, kind, name) FROM kafka_lake.snapshot_definitions" \
	  -c "SELECT string_agg(gold || ':' || version, ',' ORDER BY gold) FROM kafka_lake.golds" \
	  -c "SELECT string_agg(check_name || ':' || version, ',') FROM kafka_lake.quality_checks"
}
is "$(q -d kl_gdump_source -c "SELECT string_agg(page || '=' || ms, ',' ORDER BY page) FROM kafka_lake.gd_pages_current")" \
	"/p0=40,/p1=30" "the recheck published version 2 of the gold"
before=$(state kl_gdump_source)
ok "pg_dump -d kl_gdump_source -f '$KL_TMP/gdump.sql' 2>'$KL_TMP/gdump.err'" "pg_dump dumps it"
ok "psql -X -q -v ON_ERROR_STOP=1 -d kl_gdump_restored -f '$KL_TMP/gdump.sql' >/dev/null 2>'$KL_TMP/grestore.err'" \
	"the dump restores into a new database"
[ -s "$KL_TMP/grestore.err" ] && diag "$(cat "$KL_TMP/grestore.err")"
is "$(state kl_gdump_restored)" "$before" \
	"the history of golds and checks, and which versions made each snapshot, are the same"
is "$(q -d kl_gdump_restored -c "SELECT who || ' ' || visits FROM kafka_lake.gd_total_as_of(1)")" "t94_owner 4" \
	"the dropped gold's rows still read through its as-of function"
is "$(q -d kl_gdump_restored -c "SELECT string_agg(page || '=' || ms, ',' ORDER BY page) FROM kafka_lake.gd_pages_as_of(1)")" \
	"/p0=60,/p1=40" "and the first snapshot keeps version 1's rows"
q -d kl_gdump_restored -c "SELECT kafka_lake.define_gold('gd_src', 'gd_pages', ARRAY['page'], '{\"visits\": {\"count\": \"*\"}, \"ms\": {\"sum\": \"ms\"}}')" >/dev/null
is "$(q -d kl_gdump_restored -c "SELECT version FROM kafka_lake.golds WHERE gold = 'gd_pages'")" "3" \
	"the restored catalog defines the gold again as version 3"

q -d postgres -c "DROP DATABASE kl_gdump_restored" -c "DROP DATABASE kl_gdump_source" >/dev/null
q -d postgres -c "DROP ROLE t94_owner" >/dev/null
