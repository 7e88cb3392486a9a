#!/usr/bin/env bash
# test/t/99e_upgrade_1_9.sh: a database created at kafka_lake 1.8 keeps everything it landed,
# bridged, closed and expired through ALTER EXTENSION kafka_lake UPDATE TO '1.9', from which
# an expired batch's fingerprints live in its manifest only.  At 1.8 (with this build, which
# must not drop the fingerprints of a 1.8 catalog): a compressed source and a
# plain one from the same topic, a date closed and expired, another bridged.  After the update:
# the expired batches' coordinates keep their offsets and statuses and no fingerprints, the
# others keep theirs; a replayed expired coordinate is still reused (its fingerprint read from
# the manifest) in both sources; verify() is clean; the closed date keeps its certificate; the open
# date bridges as before (skipped); a new expire() and landing go on; and the database holds the
# same extension objects as one created at 1.9.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 13
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up19
topic=upgrade19.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.8' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.8 "the extension is created at 1.8"

fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 2 "$@" >/dev/null 2>&1; }
fill --count 2000 --start 1 --bad-every 9 --date 2026-06-28
fill --count 100 --start 1 --date 2026-06-28
q -d $db >/dev/null <<SQL
CREATE SERVER up19_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up19', 'up19_srv', '$topic');
SELECT kafka_lake.create_source('up19_plain', 'up19_srv', '$topic', group_id => 'kl.up19.plain');
SELECT kafka_lake.set_compression('up19_plain', 'none');
SET kafka_lake.batch_max_records = 700;
SELECT * FROM kafka_lake.land('up19');
SELECT * FROM kafka_lake.land('up19_plain');
SQL
fill --count 500 --start 5001 --date 2026-06-30
q -d $db >/dev/null <<SQL
SELECT * FROM kafka_lake.land('up19');
SELECT * FROM kafka_lake.land('up19_plain');
SELECT * FROM kafka_lake.close_date('up19', '2026-06-28');
SELECT * FROM kafka_lake.bridge('up19', '2026-06-30');
SELECT * FROM kafka_lake.expire('up19', before => '2026-06-29');
SELECT * FROM kafka_lake.expire('up19_plain', before => '2026-06-29');
SQL
expired_with_fp() {
	q -d $db -c "SELECT count(*) FILTER (WHERE c.fingerprints IS NOT NULL) || ' ' || count(*) FROM kafka_lake.coordinates c
	               JOIN kafka_lake.batches b USING (source_id, batch_id) WHERE b.expired_at IS NOT NULL"
}
list() {
	q -d $db -c "SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', c.source, c.topic, c.partition, c.\"offset\", c.status,
	                 CASE WHEN b.expired_at IS NULL THEN c.fingerprint END, c.batch_id), ',' ORDER BY c.source, c.topic, c.partition, c.\"offset\"))
	               FROM kafka_lake.coordinate_list c JOIN kafka_lake.batches b USING (batch_id)
	               JOIN kafka_lake.sources s ON s.source_id = b.source_id AND s.source = c.source"
}
# the first batch of partition 0 of a source: expired (of 2026-06-28)
first_range() {
	q -d $db -c "SELECT first_offset || ', ' || last_offset FROM kafka_lake.batches JOIN kafka_lake.sources USING (source_id)
	               WHERE source = '$1' AND partition = 0 AND expired_at IS NOT NULL ORDER BY first_offset LIMIT 1"
}
span() { echo $(( ${1#*, } - ${1%%,*} + 1 )); }
at18=$(expired_with_fp)
list_before=$(list)
range=$(first_range up19)
range_plain=$(first_range up19_plain)

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.9'\" >/dev/null 2>'$KL_TMP/up19.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.9' succeeds"
[ -s "$KL_TMP/up19.err" ] && diag "$(cat "$KL_TMP/up19.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.9 "the extension is at 1.9"
n_expired=$(echo "$at18" | cut -d' ' -f2)
ok "[ '$n_expired' -ge 4 ] && [ '$at18' = '$n_expired $n_expired' ]" \
	"at 1.8, expire() kept the fingerprints of the $n_expired expired coordinates rows (its catalog needs them)"
is "$(expired_with_fp)" "0 $n_expired" "after the update, no expired batch keeps its fingerprints in the catalog"
is "$(list)" "$list_before" "coordinate_list lists the same $(echo "$list_before" | cut -d' ' -f1) rows, with the fingerprints of the batches that did not expire"
is "$(q -d $db -c "SELECT status || ' ' || reused FROM kafka_lake.replay('up19', 0, $range)") $(q -d $db -c "SELECT status || ' ' || reused FROM kafka_lake.replay('up19_plain', 0, $range_plain)")" \
	"reused $(span "$range") reused $(span "$range_plain")" "a replayed expired coordinate is reused in both sources, judged by its manifest's fingerprints"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up19')") $(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up19_plain')")" "0 0" \
	"verify() is clean for both sources"
is "$(q -d $db -c "SELECT string_agg(status, ',') FROM kafka_lake.date_closings JOIN kafka_lake.sources USING (source_id)
                     WHERE source = 'up19' AND business_date = '2026-06-28'")" closed \
	"the closed, expired date keeps its certificate"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up19', '2026-06-30')")" skipped \
	"the open date bridges as before: the same input, skipped"
fill --count 100 --start 9001 --date 2026-07-01
is "$(q -d $db -c "SELECT sum(accepted) FROM kafka_lake.land('up19')")" 100 "a new landing goes on from the commits made at 1.8"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.expire('up19', before => '2026-07-01')") $(expired_with_fp | cut -d' ' -f1)" "2 0" \
	"a new expire() at 1.9 expires 2026-06-30's batches without their fingerprints"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.9' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" >/dev/null
