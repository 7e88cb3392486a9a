#!/usr/bin/env bash
# test/t/99_upgrade_1_5.sh: a database created at kafka_lake 1.4 keeps everything it landed,
# bridged and closed through ALTER EXTENSION kafka_lake UPDATE TO '1.5'.
# At 1.4: a source with two dates landed, one bridged and closed, the other bridged.  After
# the update: the records read the same, verify() is clean, the certificate is in effect and
# not final, source_status has its new column (empty), no source has a dedupe horizon and
# expire() removes no event_id; then a horizon set with set_dedupe_horizon() makes expire()
# remove the closed date's event_ids, and the open date bridges as before; the updated
# database holds the same extension objects and source_status as one created at 1.5.
# Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 13
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up15
topic=upgrade15.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.4' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.4 "the extension is created at 1.4"

q -d $db >/dev/null <<SQL
CREATE SERVER up15_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up15', 'up15_srv', '$topic');
CREATE FUNCTION pg_temp.send(i int, d text) RETURNS bigint LANGUAGE sql AS \$\$
  SELECT kafka_lake.produce('up15_srv', '$topic', convert_to(json_build_object(
         'event_id', 'u-' || i, 'schema_version', 1, 'event_time', d || 'T08:00:00+09:00',
         'business_date', d, 'plant_id', 'p1', 'line_id', 'l1', 'work_order_id', 'wo-' || i,
         'machine_id', 'm1', 'product_code', 'x', 'operation', 'assembly',
         'units_produced', 10, 'defect_count', 0, 'cycle_time_ms', 100)::text, 'UTF8'))
\$\$;
-- each date in batches of its own
SELECT pg_temp.send(1, '2026-05-01'), pg_temp.send(2, '2026-05-01');
SELECT * FROM kafka_lake.land('up15');
SELECT pg_temp.send(3, '2026-05-02'), pg_temp.send(4, '2026-05-02');
SELECT * FROM kafka_lake.land('up15');
SELECT * FROM kafka_lake.close_date('up15', '2026-05-01');
SELECT * FROM kafka_lake.bridge('up15', '2026-05-02');
SQL
state() {
	q -d $db -c "SELECT md5(string_agg(r::text, ',' ORDER BY r.\"offset\", r.batch_id)) FROM kafka_lake.up15_records r"
}
before=$(state)

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.5'\" >/dev/null 2>'$KL_TMP/up15.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.5' succeeds"
[ -s "$KL_TMP/up15.err" ] && diag "$(cat "$KL_TMP/up15.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.5 "the extension is at 1.5"
is "$(state)" "$before" "the records read the same"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up15')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT status || ' ' || (event_ids_pruned_at IS NULL) FROM kafka_lake.date_closings WHERE business_date = '2026-05-01'")" \
	"closed true" "the certificate made at 1.4 is in effect, and not final"
is "$(q -d $db -c "SELECT count(*) || ' ' || count(event_ids_pruned_through) FROM kafka_lake.source_status WHERE source = 'up15'")" \
	"1 0" "source_status has the new column, empty"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.expire('up15', before => '2026-01-01') WHERE status = 'event_ids_pruned'")" 0 \
	"without a horizon, expire() removes no event_id"
q -d $db -c "SELECT kafka_lake.set_dedupe_horizon('up15', '7 days')" >/dev/null
is "$(q -d $db -c "SELECT records FROM kafka_lake.expire('up15', before => '2026-01-01') WHERE status = 'event_ids_pruned'")" 2 \
	"with a horizon, expire() removes the closed date's two event_ids"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events")" 2 "the open date keeps its own"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up15', '2026-05-02')")" skipped \
	"the open date bridges as before: the same input, skipped"
q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.5' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"
is "$(q -d $db -c "SELECT md5(pg_get_viewdef('kafka_lake.source_status'))")" \
	"$(q -d ${db}_fresh -c "SELECT md5(pg_get_viewdef('kafka_lake.source_status'))")" "with the same source_status"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" >/dev/null
