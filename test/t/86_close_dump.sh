#!/usr/bin/env bash
# test/t/86_close_dump.sh: pg_dump keeps the certificates.  A date closed, reopened by a late
# event and closed again (certificates that supersede each other, snapshots that replace each
# other) and the partition_state of the landing, dumped and restored into a new database: the
# same rows, the same late events, the same gold.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 5
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
topic=close.dump.t

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_cdump_source" \
	-c "DROP DATABASE IF EXISTS kl_cdump_restored" \
	-c "CREATE DATABASE kl_cdump_source" -c "CREATE DATABASE kl_cdump_restored" >/dev/null
q -d kl_cdump_source -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
q -d kl_cdump_source >/dev/null <<SQL
CREATE SERVER cd_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('cd_src', 'cd_srv', '$topic');
CREATE FUNCTION pg_temp.send(id text, part int) RETURNS bigint LANGUAGE sql AS \$\$
    SELECT kafka_lake.produce('cd_srv', '$topic', convert_to(json_build_object(
        'event_id', id, 'schema_version', 1, 'event_time', '2026-11-01T09:00:00Z',
        'business_date', '2026-11-01', 'plant_id', 'plant-86', 'line_id', 'line-01',
        'work_order_id', 'wo-' || id, 'machine_id', 'm-1', 'product_code', 'prd-a',
        'operation', 'welding', 'units_produced', 1, 'defect_count', 0,
        'cycle_time_ms', 100)::text, 'UTF8'), NULL, part)
\$\$;
SELECT pg_temp.send('e1', 0), pg_temp.send('e2', 1);
SELECT * FROM kafka_lake.close_date('cd_src', '2026-11-01');
SELECT pg_temp.send('e3', 1);
SELECT * FROM kafka_lake.land('cd_src');
SELECT * FROM kafka_lake.bridge('cd_src', '2026-11-01', reopen => true);
SELECT * FROM kafka_lake.close_date('cd_src', '2026-11-01');
SELECT pg_temp.send('e4', 0);
SELECT * FROM kafka_lake.land('cd_src');
SQL
state() {
	q -d "$1" -c "SELECT md5(string_agg(c::text, ',' ORDER BY c.closing_id)) FROM kafka_lake.date_closings c" \
	  -c "SELECT md5(string_agg(p::text, ',' ORDER BY p.closing_id, p.partition)) FROM kafka_lake.date_closing_partitions p" \
	  -c "SELECT md5(string_agg(s::text, ',' ORDER BY s.snapshot_id)) FROM kafka_lake.snapshots s" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.gold_daily_line_metrics g" \
	  -c "SELECT md5(string_agg(p::text, ',' ORDER BY p.partition)) FROM kafka_lake.partition_state p"
}
before=$(state kl_cdump_source)
late_before=$(q -d kl_cdump_source -c "SELECT string_agg(event_id || '@' || closing_id, ',') FROM kafka_lake.late_events")
is "$(q -d kl_cdump_source -c "SELECT string_agg(status, ',' ORDER BY closing_id) FROM kafka_lake.date_closings")" \
	"superseded,closed" "a certificate superseded by a later one, which is in effect"

ok "pg_dump -d kl_cdump_source -f '$KL_TMP/cdump.sql' 2>'$KL_TMP/cdump.err'" "pg_dump dumps it"
ok "psql -X -q -v ON_ERROR_STOP=1 -d kl_cdump_restored -f '$KL_TMP/cdump.sql' >/dev/null 2>'$KL_TMP/crestore.err'" \
	"the dump restores into a new database"
[ -s "$KL_TMP/crestore.err" ] && diag "$(cat "$KL_TMP/crestore.err")"
is "$(state kl_cdump_restored)" "$before" \
	"the certificates, their partitions, the snapshots, gold and partition_state are the same"
is "$(q -d kl_cdump_restored -c "SELECT string_agg(event_id || '@' || closing_id, ',') FROM kafka_lake.late_events")" \
	"$late_before" "and so are the late events (e4, against the certificate in effect)"

q -d postgres -c "DROP DATABASE kl_cdump_restored" -c "DROP DATABASE kl_cdump_source" >/dev/null
