#!/usr/bin/env bash
# test/t/99f_upgrade_1_10.sh: a database created at kafka_lake 1.9 keeps everything it landed,
# bridged and closed through ALTER EXTENSION kafka_lake UPDATE TO '1.10',
# which adds export().  At 1.9: a source landed, a date closed, another bridged (export() does
# not exist there).  After the update: coordinate_list and verify() are the same, the bridge of
# the open date is skipped (same source_hash), export() writes both dates' snapshots, which DuckDB
# reads with the rows PostgreSQL holds; bridge() and close_date() gain export and keep their
# grants; and the database holds the same extension objects as one created at 1.10.  Needs the
# broker, node and test/parquet.
source "$(dirname "$0")/../lib/tap.sh"
plan 11
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up110
topic=upgrade110.events
exp=$KL_TMP/export110
rm -rf "$exp" && mkdir -p "$exp" && chown postgres "$exp"
pq=$(cd "$(dirname "$0")/../parquet" && pwd)

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.9' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.9 "the extension is created at 1.9"

fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 2 "$@" >/dev/null 2>&1; }
fill --count 600 --start 1 --bad-every 9 --date 2026-06-28
fill --count 300 --start 5001 --date 2026-06-30
q -d $db >/dev/null <<SQL
CREATE SERVER up110_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up110', 'up110_srv', '$topic');
SELECT * FROM kafka_lake.land('up110');
SELECT * FROM kafka_lake.close_date('up110', '2026-06-28');
SELECT * FROM kafka_lake.bridge('up110', '2026-06-30');
DROP ROLE IF EXISTS up110_publisher;
CREATE ROLE up110_publisher;
GRANT EXECUTE ON FUNCTION kafka_lake.bridge(text, date, boolean, boolean),
                          kafka_lake.close_date(text, date, timestamptz, interval) TO up110_publisher;
SQL
list() {
	q -d $db -c "SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', source, topic, partition, \"offset\", status, fingerprint, batch_id),
	               ',' ORDER BY source, topic, partition, \"offset\")) FROM kafka_lake.coordinate_list"
}
list_before=$(list)
ok "[ -z \"\$(q -d $db -c \"SELECT 1 FROM pg_proc WHERE proname = 'export' AND pronamespace = 'kafka_lake'::regnamespace\")\" ]" \
	"at 1.9 there is no export()"

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.10'\" >/dev/null 2>'$KL_TMP/up110.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.10' succeeds"
[ -s "$KL_TMP/up110.err" ] && diag "$(cat "$KL_TMP/up110.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.10 "the extension is at 1.10"
is "$(q -d $db -c "SELECT string_agg(has_function_privilege(r, f, 'EXECUTE')::text, ' ' ORDER BY r, f)
                     FROM unnest(ARRAY['up110_publisher', 'public']) r,
                          unnest(ARRAY['kafka_lake.bridge(text, date, boolean, boolean, boolean)',
                                       'kafka_lake.close_date(text, date, timestamptz, interval, boolean)']) f")" \
	"false false true true" "bridge() and close_date() gain export: whoever could execute them still can, PUBLIC still cannot"
is "$(list)" "$list_before" "coordinate_list lists the same $(echo "$list_before" | cut -d' ' -f1) rows"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up110')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up110', '2026-06-30')")" skipped \
	"the open date bridges as before: the same input, skipped"
is "$(PGOPTIONS="-c kafka_lake.export_dir=$exp" q -d $db -c "SELECT string_agg(relation || ' ' || status, ',' ORDER BY relation)
        FROM (SELECT * FROM kafka_lake.export('up110', '2026-06-28') UNION ALL SELECT * FROM kafka_lake.export('up110', '2026-06-30')) e")" \
	"gold_daily_line_metrics exported,gold_daily_line_metrics exported,silver_machine_events exported,silver_machine_events exported" \
	"export() writes the snapshots bridged and closed at 1.9"
is "$(cd "$pq" && node read.js sql "SELECT business_date::VARCHAR, sum(units_produced)::BIGINT FROM read_parquet('$exp/up110/gold_daily_line_metrics/*/*.parquet', hive_partitioning = true) GROUP BY ALL ORDER BY 1")" \
	"$(q -d $db -c "SELECT json_build_array(business_date::text, sum(units_produced)::text) FROM kafka_lake.gold_current WHERE source = 'up110' GROUP BY business_date ORDER BY business_date" | tr -d ' ')" \
	"DuckDB reads both dates' gold as PostgreSQL holds it"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.10' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" -c "DROP ROLE up110_publisher" >/dev/null
