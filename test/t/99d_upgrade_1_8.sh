#!/usr/bin/env bash
# test/t/99d_upgrade_1_8.sh: a database created at kafka_lake 1.7 keeps everything it landed,
# bridged, closed and excluded through ALTER EXTENSION kafka_lake UPDATE TO '1.8', which
# reads coordinate_list once per batch.  At 1.7: a compressed source and a
# plain one from the same topic, with duplicates, quarantined records and an exclusion (whose
# duplicate is promoted), a date closed and another bridged.  After the update: coordinate_list
# lists the same rows (offset, status, fingerprint, batch) as 1.7's view did, the records read
# the same, verify() is clean, the closed date is still certified, the open date bridges as
# before (skipped), a new landing goes on, and the database holds the same extension objects
# as one created at 1.8.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 11
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up18
topic=upgrade18.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.7' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.7 "the extension is created at 1.7"

fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 2 "$@" >/dev/null 2>&1; }
fill --count 3000 --start 1 --bad-every 7
fill --count 200 --start 1
fill --count 500 --start 5001 --date 2026-06-30
q -d $db >/dev/null <<SQL
CREATE SERVER up18_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up18', 'up18_srv', '$topic');
SELECT kafka_lake.create_source('up18_plain', 'up18_srv', '$topic', group_id => 'kl.up18.plain');
SELECT kafka_lake.set_compression('up18_plain', 'none');
SELECT * FROM kafka_lake.land('up18');
SELECT * FROM kafka_lake.land('up18_plain');
SELECT * FROM kafka_lake.exclude('up18', event_id => (SELECT event_id FROM kafka_lake.up18_records
                                   WHERE status = 'duplicate_event_id' ORDER BY partition, "offset" LIMIT 1), reason => 'test');
SELECT * FROM kafka_lake.close_date('up18', '2026-06-29');
SELECT * FROM kafka_lake.bridge('up18', '2026-06-30');
SQL
list() {
	q -d $db -c "SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', source, topic, partition, \"offset\", status, fingerprint, batch_id),
	                                    ',' ORDER BY source, topic, partition, \"offset\")) FROM kafka_lake.coordinate_list"
}
state() {
	q -d $db -c "SELECT md5(string_agg(concat_ws('|', r.topic, r.partition, r.\"offset\", r.status, r.event_id, r.raw_value),
	                                    ',' ORDER BY r.topic, r.partition, r.\"offset\")) FROM kafka_lake.up18_records r"
}
statuses=$(q -d $db -c "SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM kafka_lake.coordinate_list")
list_before=$(list)
before=$(state)

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.8'\" >/dev/null 2>'$KL_TMP/up18.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.8' succeeds"
[ -s "$KL_TMP/up18.err" ] && diag "$(cat "$KL_TMP/up18.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.8 "the extension is at 1.8"
is "$statuses" "accepted,duplicate_event_id,excluded,quarantined" "at 1.7, coordinate_list showed every status"
is "$(list)" "$list_before" "coordinate_list lists the same $(echo "$list_before" | cut -d' ' -f1) rows as 1.7's view"
is "$(state)" "$before" "the records read the same"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up18')") $(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up18_plain')")" "0 0" \
	"verify() is clean for both sources"
is "$(q -d $db -c "SELECT status FROM kafka_lake.close_date('up18', '2026-06-29')")" already_closed \
	"close_date() of the closed date finds its certificate as it was"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up18', '2026-06-30')")" skipped \
	"the open date bridges as before: the same input, skipped"
fill --count 100 --start 9001 --date 2026-07-01
is "$(q -d $db -c "SELECT sum(accepted) FROM kafka_lake.land('up18')")" 100 "a new landing goes on from the commits made at 1.7"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.8' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" >/dev/null
