#!/usr/bin/env bash
# test/t/99b_upgrade_1_6.sh: a database created at kafka_lake 1.5 keeps everything it landed,
# bridged, closed and excluded through ALTER EXTENSION kafka_lake UPDATE TO '1.6', which lets
# a source land several topics.  At 1.5: a source with two dates landed,
# one closed, the other bridged, a record excluded, and replay() and exclude() granted to a
# role.  After the update: the records read the same, verify() is clean, the certificate
# names its topic for each partition and still certifies the date (close_date again is
# already_closed), accepted_events names no topic (every coordinate is of the first), the role
# keeps its grants on the new signatures of replay() and exclude(), the open date bridges as
# before, a new landing goes on, and a source of two topics can be made; the updated database
# holds the same extension objects and source_status as one created at 1.6.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 15
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up16
topic=upgrade16.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create upgrade16.more 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "DROP ROLE IF EXISTS up16_ops" -c "CREATE ROLE up16_ops" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.5' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.5 "the extension is created at 1.5"

q -d $db >/dev/null <<SQL
CREATE SERVER up16_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up16', 'up16_srv', '$topic');
GRANT EXECUTE ON FUNCTION kafka_lake.replay(text, integer, bigint, bigint, interval) TO up16_ops;
GRANT EXECUTE ON FUNCTION kafka_lake.exclude(text, text, integer, bigint, text) TO up16_ops;
CREATE FUNCTION pg_temp.send(i int, d text, p int) RETURNS bigint LANGUAGE sql AS \$\$
  SELECT kafka_lake.produce('up16_srv', '$topic', convert_to(json_build_object(
         'event_id', 'u-' || i, 'schema_version', 1, 'event_time', d || 'T08:00:00+09:00',
         'business_date', d, 'plant_id', 'p1', 'line_id', 'l1', 'work_order_id', 'wo-' || i,
         'machine_id', 'm1', 'product_code', 'x', 'operation', 'assembly',
         'units_produced', 10, 'defect_count', 0, 'cycle_time_ms', 100)::text, 'UTF8'), partition => p)
\$\$;
SELECT pg_temp.send(1, '2026-05-01', 0), pg_temp.send(2, '2026-05-01', 1), pg_temp.send(5, '2026-05-01', 1);
SELECT * FROM kafka_lake.land('up16');
SELECT * FROM kafka_lake.exclude('up16', event_id => 'u-5', reason => 'a test record');
SELECT pg_temp.send(3, '2026-05-02', 0), pg_temp.send(4, '2026-05-02', 1);
SELECT * FROM kafka_lake.land('up16');
SELECT * FROM kafka_lake.close_date('up16', '2026-05-01');
SELECT * FROM kafka_lake.bridge('up16', '2026-05-02');
SQL
state() {
	q -d $db -c "SELECT md5(string_agg(r::text, ',' ORDER BY r.partition, r.\"offset\", r.batch_id)) FROM kafka_lake.up16_records r"
}
before=$(state)

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.6'\" >/dev/null 2>'$KL_TMP/up16.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.6' succeeds"
[ -s "$KL_TMP/up16.err" ] && diag "$(cat "$KL_TMP/up16.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.6 "the extension is at 1.6"
is "$(state)" "$before" "the records read the same"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up16')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT string_agg(p.topic || ':' || p.partition || ':' || p.through_offset, ',' ORDER BY p.partition)
	FROM kafka_lake.date_closing_partitions p")" "$topic:0:2,$topic:1:3" "the certificate names the source's topic for each partition"
is "$(q -d $db -c "SELECT status FROM kafka_lake.close_date('up16', '2026-05-01')")" already_closed \
	"close_date() of the closed date finds its certificate as it was"
is "$(q -d $db -c "SELECT count(*) || ' ' || count(topic) FROM kafka_lake.accepted_events")" "4 0" \
	"accepted_events names no topic: every coordinate is of the source's first"
is "$(q -d $db -c "SELECT has_function_privilege('up16_ops', 'kafka_lake.replay(text, integer, bigint, bigint, interval, text)', 'EXECUTE')
	AND has_function_privilege('up16_ops', 'kafka_lake.exclude(text, text, integer, bigint, text, text)', 'EXECUTE')
	AND NOT has_function_privilege('up16_ops', 'kafka_lake.unexclude(text, text, integer, bigint, text, text)', 'EXECUTE')")" t \
	"the role keeps EXECUTE on replay() and exclude(), now with their topic argument, and gains nothing else"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up16', '2026-05-02')")" skipped \
	"the open date bridges as before: the same input, skipped"
is "$(q -d $db -c "SELECT status FROM kafka_lake.replay('up16', 0, 0, 0)")" reused \
	"replay() of an offset range works without the topic on a source of one topic"
q -d $db -c "SELECT kafka_lake.produce('up16_srv', '$topic', convert_to(json_build_object(
         'event_id', 'u-6', 'schema_version', 1, 'event_time', '2026-05-02T09:00:00+09:00',
         'business_date', '2026-05-02', 'plant_id', 'p1', 'line_id', 'l1', 'work_order_id', 'wo-6',
         'machine_id', 'm1', 'product_code', 'x', 'operation', 'assembly',
         'units_produced', 10, 'defect_count', 0, 'cycle_time_ms', 100)::text, 'UTF8'), partition => 0)" >/dev/null
is "$(q -d $db -c "SELECT sum(accepted) FROM kafka_lake.land('up16')")" 1 "a new landing goes on from the commits made at 1.5"
ok "q -d $db -c \"SELECT kafka_lake.create_source('up16_two', 'up16_srv', '$topic,upgrade16.more', group_id => 'kl.up16.two')\" >/dev/null" \
	"a source of two topics can be made"
q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.6' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"
is "$(q -d $db -c "SELECT md5(pg_get_viewdef('kafka_lake.source_status'))")" \
	"$(q -d ${db}_fresh -c "SELECT md5(pg_get_viewdef('kafka_lake.source_status'))")" "with the same source_status"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" -c "DROP ROLE up16_ops" >/dev/null
