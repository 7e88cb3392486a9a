#!/usr/bin/env bash
# test/t/99c_upgrade_1_7.sh: a database created at kafka_lake 1.6 keeps everything it landed,
# bridged and closed through ALTER EXTENSION kafka_lake UPDATE TO '1.7', which compresses
# batches.  At 1.6: a source of two topics with a date closed and another
# bridged, its batches plain JSONL.  After the update: the records read the same, verify() is
# clean, the closed date is still certified, the open date bridges as before (skipped: the
# same input), the source keeps writing plain batches (compression 'none': what it had) until
# set_compression('zstd'), after which its next batch is compressed and both kinds read
# together; compact() of the partition turns its plain batches into one compressed batch
# that reads the same; a new source compresses; and the updated database holds the same
# extension objects and source_status as one created at 1.7.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 17
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up17
topic=upgrade17.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create upgrade17.more 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.6' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.6 "the extension is created at 1.6"

q -d $db >/dev/null <<SQL
CREATE SERVER up17_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up17', 'up17_srv', '$topic, upgrade17.more');
CREATE FUNCTION pg_temp.send(i int, d text, t text, p int) RETURNS bigint LANGUAGE sql AS \$\$
  SELECT kafka_lake.produce('up17_srv', t, convert_to(json_build_object(
         'event_id', 'u-' || i, 'schema_version', 1, 'event_time', d || 'T08:00:00+09:00',
         'business_date', d, 'plant_id', 'p1', 'line_id', 'l1', 'work_order_id', 'wo-' || i,
         'machine_id', 'm1', 'product_code', 'x', 'operation', 'assembly',
         'units_produced', 10, 'defect_count', 0, 'cycle_time_ms', 100)::text, 'UTF8'), partition => p)
\$\$;
SELECT pg_temp.send(1, '2026-05-01', '$topic', 0), pg_temp.send(2, '2026-05-01', '$topic', 1),
       pg_temp.send(3, '2026-05-01', 'upgrade17.more', 0);
SELECT * FROM kafka_lake.land('up17');
SELECT pg_temp.send(4, '2026-05-02', '$topic', 0), pg_temp.send(5, '2026-05-02', 'upgrade17.more', 0);
SELECT * FROM kafka_lake.land('up17');
SELECT * FROM kafka_lake.close_date('up17', '2026-05-01');
SELECT * FROM kafka_lake.bridge('up17', '2026-05-02');
SQL
state() {
	q -d $db -c "SELECT md5(string_agg(concat_ws('|', r.topic, r.partition, r.\"offset\", r.status, r.event_id, r.raw_value),
	                                    ',' ORDER BY r.topic, r.partition, r.\"offset\")) FROM kafka_lake.up17_records r"
}
before=$(state)

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.7'\" >/dev/null 2>'$KL_TMP/up17.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.7' succeeds"
[ -s "$KL_TMP/up17.err" ] && diag "$(cat "$KL_TMP/up17.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.7 "the extension is at 1.7"
is "$(state)" "$before" "the records read the same"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up17')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT status FROM kafka_lake.close_date('up17', '2026-05-01')")" already_closed \
	"close_date() of the closed date finds its certificate as it was"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up17', '2026-05-02')")" skipped \
	"the open date bridges as before: the same input, skipped"
is "$(q -d $db -c "SELECT compression || ' ' || (SELECT count(*) FROM kafka_lake.batches WHERE compression IS NULL AND file_raw_bytes IS NULL)
	|| ' ' || (SELECT count(*) FROM kafka_lake.batches) FROM kafka_lake.sources WHERE source = 'up17'")" "none 5 5" \
	"the source keeps writing plain batches, and every batch of 1.6 is plain"

send() {
	q -d $db -c "SELECT kafka_lake.produce('up17_srv', '$2', convert_to(json_build_object(
	         'event_id', 'u-$1', 'schema_version', 1, 'event_time', '2026-05-02T09:00:00+09:00',
	         'business_date', '2026-05-02', 'plant_id', 'p1', 'line_id', 'l1', 'work_order_id', 'wo-$1',
	         'machine_id', 'm1', 'product_code', 'x', 'operation', 'assembly',
	         'units_produced', 10, 'defect_count', 0, 'cycle_time_ms', 100)::text, 'UTF8'), partition => 0)" >/dev/null
}
send 6 "$topic"
is "$(q -d $db -c "SELECT sum(accepted) FROM kafka_lake.land('up17')")" 1 "a new landing goes on from the commits made at 1.6"
is "$(q -d $db -c "SELECT compression IS NULL FROM kafka_lake.batches ORDER BY created_at DESC, batch_id LIMIT 1")" t \
	"its batch is plain, as the source's were"
q -d $db -c "SELECT kafka_lake.set_compression('up17', 'zstd')" >/dev/null
send 7 "$topic"
q -d $db -c "SELECT * FROM kafka_lake.land('up17')" >/dev/null
is "$(q -d $db -c "SELECT b.compression FROM kafka_lake.batches b WHERE b.first_offset = 3 AND b.topic = '$topic' AND b.partition = 0")" zstd \
	"after set_compression('zstd') the next batch is compressed"
is "$(q -d $db -c "SELECT count(*) || ' ' || count(DISTINCT event_id) FROM kafka_lake.up17_records")" "7 7" \
	"plain and compressed batches read together"
middle=$(state)
is "$(q -d $db -c "SELECT string_agg(status || ':' || batches, ',' ORDER BY topic, partition) FROM kafka_lake.compact('up17', partition => 0) WHERE topic = '$topic'")" \
	"compacted:4" "compact() merges the partition's plain and compressed batches"
is "$(q -d $db -c "SELECT compression FROM kafka_lake.batches WHERE topic = '$topic' AND partition = 0")" zstd \
	"into one compressed batch"
is "$(state)" "$middle" "which reads the same records"

q -d $db -c "SELECT kafka_lake.create_source('up17_new', 'up17_srv', 'upgrade17.more', group_id => 'kl.up17.new')" >/dev/null
is "$(q -d $db -c "SELECT compression FROM kafka_lake.sources WHERE source = 'up17_new'")" zstd "a new source compresses"
q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.7' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" >/dev/null
