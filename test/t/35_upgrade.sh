#!/usr/bin/env bash
# test/t/35_upgrade.sh: a database created at kafka_lake 1.0 keeps everything it landed and
# bridged through ALTER EXTENSION kafka_lake UPDATE.  Lands and bridges at 1.0 (two
# partitions, accepted, duplicate and quarantined records, one published snapshot), updates,
# and checks that the foreign table reads the same rows, the source keeps its consumer group
# (the 1.0 default, kafka_lake.<source>), verify() stays clean, the same date
# bridges to the same source_hash (adapter reused, run skipped, no new snapshot), and landing
# and bridging go on.  A landing written by the 1.0 build itself (test/fixtures/: an event_time with
# a lower-case "z", identifiers lower-cased and trimmed in ASCII only, an escaped field name
# quarantined), adopted by recover(), bridges to the source_hash the 1.0 build computed, before
# and after the update, and its event_time values still read as instants.  Then a database
# created at the default version must hold the same extension objects as the updated one.  Needs
# the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 17
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_upgrade
topic=upgrade.t

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 400 --partitions 2 \
	--bad-every 50 2>/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.0' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.0 \
	"the extension is created at 1.0"

q -d $db >/dev/null <<SQL
CREATE SERVER up_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up_src', 'up_srv', '$topic');
-- the group id a 1.0 build stored by default (kafka_lake.<source>)
UPDATE kafka_lake.sources SET group_id = 'kafka_lake.up_src' WHERE source = 'up_src';
SELECT count(*) FROM kafka_lake.land('up_src');
-- a duplicate event_id at a new coordinate
SELECT kafka_lake.produce('up_srv', '$topic', value, partition => 1)
  FROM (SELECT convert_to(event::text, 'UTF8') AS value FROM kafka_lake.up_src_records
        WHERE status = 'accepted' ORDER BY partition, "offset" LIMIT 1) e;
SELECT count(*) FROM kafka_lake.land('up_src');
SQL

# a landing written by the 1.0 build, adopted as it is (its files never change)
fixture=$(cd "$(dirname "$0")/../fixtures" && pwd)
legacy_hash=b249bed518295d84110742a2d23482995cecbe0bdea9045dd912f9837d263e19
q -d $db -c "SELECT kafka_lake.create_source('legacy_src', 'up_srv', 'kafka_lake.legacy.v1')" >/dev/null
legacy_dir=$(q -d $db -c "SELECT current_setting('data_directory') || '/kafka_lake/legacy_src'")
cp -r "$fixture/topic=kafka_lake.legacy.v1" "$legacy_dir/"
chown -R postgres: "$legacy_dir"
is "$(q -d $db -c "SELECT source_hash || ' ' || run_status FROM kafka_lake.bridge('legacy_src', '2026-06-29')")" \
	"$legacy_hash processed" "a landing of the 1.0 build bridges to the source_hash the 1.0 build computed"
legacy_before=$(q -d $db -c "SELECT md5(string_agg(\"offset\" || ':' || status || ':' || coalesce(event::text, validation_error), E'\n'
	ORDER BY \"offset\")) FROM kafka_lake.legacy_src_records")

state() {
	q -d $db -c "SELECT string_agg(status || '=' || n, ' ' ORDER BY status) FROM
		(SELECT status, count(*) AS n FROM kafka_lake.up_src_records GROUP BY status) s" \
	  -c "SELECT md5(string_agg(partition || ':' || \"offset\" || ':' || fingerprint || ':' || status
		|| ':' || coalesce(event::text, raw_value), E'\n' ORDER BY partition, \"offset\"))
		FROM kafka_lake.up_src_records"
}
before=$(state)
bridge1=$(q -d $db -c "SELECT source_hash || ' ' || adapter_status || ' ' || run_status || ' ' || snapshot_status
	FROM kafka_lake.bridge('up_src', '2026-06-29')")
gold_before=$(q -d $db -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.gold_current g")
hash=${bridge1%% *}
is "${bridge1#* }" "created processed published" "1.0 bridges the date"
ok "[ -n '$(q -d $db -c "SELECT 1 FROM kafka_lake.up_src_records WHERE status = 'duplicate_event_id' LIMIT 1")' ]" \
	"1.0 landed a duplicate_event_id"
ok "[ -n '$(q -d $db -c "SELECT 1 FROM kafka_lake.up_src_records WHERE status = 'quarantined' LIMIT 1")' ]" \
	"1.0 landed quarantined records"

ok "q -d $db -c 'ALTER EXTENSION kafka_lake UPDATE' >/dev/null 2>'$KL_TMP/upgrade.err'" \
	"ALTER EXTENSION kafka_lake UPDATE succeeds"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" \
	"$(q -d ${db}_fresh -c "SELECT default_version FROM pg_available_extensions WHERE name = 'kafka_lake'")" \
	"the extension is at the default version"
is "$(state)" "$before" "every landed record reads the same after the update"
is "$(q -d $db -c "SELECT group_id FROM kafka_lake.sources WHERE source = 'up_src'")" kafka_lake.up_src \
	"a source keeps the consumer group it had"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up_src')") $(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('legacy_src')")" "0 0" \
	"verify() is clean after the update, also on the 1.0 build's landing"
is "$(q -d $db -c "SELECT source_hash || ' ' || adapter_status || ' ' || run_status || ' ' || snapshot_status
	FROM kafka_lake.bridge('up_src', '2026-06-29')")" "$hash reused skipped skipped" \
	"the same date bridges to the same source_hash: adapter reused, run skipped, no new snapshot"
is "$(q -d $db -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.gold_current g")" \
	"$gold_before" "gold is unchanged"

is "$(q -d $db -c "SELECT md5(string_agg(\"offset\" || ':' || status || ':' || coalesce(event::text, validation_error), E'\n'
	ORDER BY \"offset\")) FROM kafka_lake.legacy_src_records")" "$legacy_before" \
	"the 1.0 build's landing reads the same after the update (its lower-case z, its ASCII-only lower-casing)"
is "$(q -d $db -c "SELECT source_hash || ' ' || adapter_status || ' ' || run_status FROM kafka_lake.bridge('legacy_src', '2026-06-29')")" \
	"$legacy_hash reused skipped" "after the update the 1.0 build's landing bridges to the same source_hash"
q -d $db -c "CREATE FOREIGN TABLE legacy_times (event_id text, event_time timestamptz) SERVER up_srv
	OPTIONS (source 'legacy_src', status 'accepted')" >/dev/null
is "$(q -d $db -c "SELECT string_agg(event_id || ' ' || (event_time AT TIME ZONE 'UTC')::text, ', ' ORDER BY event_id) FROM legacy_times")" \
	"evt-legacy-1 2026-06-29 08:00:00, evt-legacy-2 2026-06-28 23:01:00.123457, evt-legacy-3 2026-06-29 08:02:00" \
	"the 1.0 build's event_time values (a lower-case z, nine fraction digits) read as the same instants"

# landing and bridging go on after the update
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 100 --partitions 2 \
	--start 401 2>/dev/null
is "$(q -d $db -c "SELECT sum(accepted) FROM kafka_lake.land('up_src')") $(q -d $db -c "SELECT adapter_status || ' ' || snapshot_status
	FROM kafka_lake.bridge('up_src', '2026-06-29')")" "100 created published" \
	"after the update new records land and a new snapshot of the date is published"

# both paths end with the same objects
q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" >/dev/null
