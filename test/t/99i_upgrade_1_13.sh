#!/usr/bin/env bash
# test/t/99i_upgrade_1_13.sh: a database created at kafka_lake 1.12 keeps everything it landed,
# bridged and closed through ALTER EXTENSION kafka_lake UPDATE to 1.13 (the default version),
# whose new sources key their event_ids ordered.  At 1.12: a source lands (a tenth of the
# event_ids twice), closes a date, bridges another.  With this build on the 1.12 catalog the
# source keys hashed, as 1.12 did, and a dump of it restored at 1.13 stays hashed (a column
# default of 'ordered' would have made it ordered, over rows keyed hashed).  After the
# update: the source is 'hashed' and its keys are the ones it landed under (event_key()
# gives them); coordinate_list and verify() are the same, the open date's bridge is
# skipped, the closed date is already_closed; event_ids landed at 1.12 and sent again are
# still refused (I3 across the update); a source made after the update is 'ordered' and
# lands the same events; the database holds the same extension objects as one created at
# 1.13.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 13
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up113
topic=upgrade113.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.12' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.12 "the extension is created at 1.12"

fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 2 "$@" >/dev/null 2>&1; }
fill --count 600 --start 1 --bad-every 9 --date 2026-06-28
fill --count 60 --start 101 --date 2026-06-28
fill --count 300 --start 5001 --date 2026-06-30
q -d $db >/dev/null <<SQL
CREATE SERVER up113_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up113', 'up113_srv', '$topic');
SELECT * FROM kafka_lake.land('up113');
SELECT * FROM kafka_lake.close_date('up113', '2026-06-28');
SELECT * FROM kafka_lake.bridge('up113', '2026-06-30');
SQL
keys() {
	q -d $db -c "SELECT count(*) || ' ' || md5(string_agg(event_key::text || ':' || partition || ':' || \"offset\", ',' ORDER BY event_key))
	               FROM kafka_lake.accepted_events WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = '$1')"
}
sha_keys() {
	q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.up113_records r USING (partition, \"offset\")
	              WHERE r.status = 'accepted' AND a.source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'up113')
	                AND a.event_key = encode(substring(sha256(int4send(a.source_id) || convert_to(r.event_id, 'UTF8')) FROM 1 FOR 16), 'hex')::uuid"
}
keys_before=$(keys up113)
is "$(sha_keys) $(q -d $db -c "SELECT count(*) FROM kafka_lake.up113_records WHERE status = 'accepted'")" "$(echo "$keys_before" | cut -d' ' -f1) $(echo "$keys_before" | cut -d' ' -f1)" \
	"at 1.12, with this build, every accepted event_id is keyed by SHA-256, as 1.12 keyed it"
# a dump of the 1.12 database restored where this build's 1.13 is the default: the restored
# source's rows are keyed hashed, and so is it
key_112=$(q -d $db -c "SELECT kafka_lake.event_key('up113', 'evt-20260628-000002')")
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${db}_restored" -c "CREATE DATABASE ${db}_restored" >/dev/null
pg_dump -d $db 2>/dev/null | psql -X -q -d ${db}_restored >/dev/null 2>"$KL_TMP/up113.restore"
is "$(q -d ${db}_restored -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'") $(q -d ${db}_restored -c "SELECT event_keys FROM kafka_lake.sources WHERE source = 'up113'") $(q -d ${db}_restored -c "SELECT kafka_lake.event_key('up113', 'evt-20260628-000002') = '$key_112'")" \
	"1.13 hashed t" "a dump of the 1.12 database restored at 1.13 keeps its source hashed, keyed as its rows are"
q -d postgres -c "DROP DATABASE ${db}_restored" >/dev/null
list() {
	q -d $db -c "SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', source, topic, partition, \"offset\", status, fingerprint, batch_id),
	               ',' ORDER BY source, topic, partition, \"offset\")) FROM kafka_lake.coordinate_list"
}
list_before=$(list)

ok "q -d $db -c 'ALTER EXTENSION kafka_lake UPDATE' >/dev/null 2>'$KL_TMP/up113.err'" "ALTER EXTENSION kafka_lake UPDATE succeeds"
[ -s "$KL_TMP/up113.err" ] && diag "$(cat "$KL_TMP/up113.err")"
is "$(q -d $db -c "SELECT extversion || ' ' || (SELECT default_version FROM pg_available_extensions WHERE name = 'kafka_lake') FROM pg_extension WHERE extname = 'kafka_lake'")" \
	"1.13 1.13" "the extension is at 1.13, the default version"
is "$(q -d $db -c "SELECT event_keys FROM kafka_lake.sources WHERE source = 'up113'") $(keys up113)" "hashed $keys_before" \
	"the source made at 1.12 keys hashed, its keys unchanged"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.up113_records r USING (partition, \"offset\")
                    WHERE r.status = 'accepted' AND a.source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'up113')
                      AND a.event_key = kafka_lake.event_key('up113', r.event_id)")" "$(echo "$keys_before" | cut -d' ' -f1)" \
	"event_key() of 1.13 gives the keys the source landed under"
is "$(list)" "$list_before" "coordinate_list lists the same $(echo "$list_before" | cut -d' ' -f1) rows"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up113')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up113', '2026-06-30')") $(q -d $db -c "SELECT status FROM kafka_lake.close_date('up113', '2026-06-28')")" \
	"skipped already_closed" "the open date bridges as before (skipped), the closed one is already_closed"

fill --count 50 --start 571 --date 2026-06-28
dups=$(q -d $db -c "SELECT count(*) FROM kafka_lake.up113_records WHERE status = 'accepted'
                     AND event_id IN (SELECT 'evt-20260628-' || lpad(g::text, 6, '0') FROM generate_series(571, 620) g)")
is "$(q -d $db -c "SELECT sum(accepted) || ' ' || sum(duplicates) FROM kafka_lake.land('up113')")" "$((50 - dups)) $dups" \
	"event_ids accepted at 1.12 and sent again are refused after the update ($dups of them: I3), the others accepted"

q -d $db -c "SELECT kafka_lake.create_source('up113n', 'up113_srv', '$topic')" >/dev/null
is "$(q -d $db -c "SELECT event_keys FROM kafka_lake.sources WHERE source = 'up113n'") $(q -d $db -c "SELECT sum(accepted) FROM kafka_lake.land('up113n')") $(q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'up113n')")" \
	"ordered $(q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'up113')") $(q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events WHERE source_id = (SELECT source_id FROM kafka_lake.sources WHERE source = 'up113')")" \
	"a source made after the update keys ordered and accepts the same event_ids"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" >/dev/null
