#!/usr/bin/env bash
# test/t/99h_upgrade_1_12.sh: a database created at kafka_lake 1.11 keeps everything it landed,
# bridged and closed through ALTER EXTENSION kafka_lake UPDATE TO '1.12',
# which lets a server owning some partitions certify an empty share of a date, and combines SQL
# golds on a coordinator.  At 1.11: a shard (partition 1 of two) lands, closes a date with
# events, bridges another; a date with events only in partition 0 cannot be closed there (this
# build on a 1.11 catalog refuses it as 1.11 did, P0002); a coordinator attaches it.  After the
# update: coordinate_list and verify() are the same, the open date's bridge is skipped, the
# closed date is already_closed; the empty share closes (0 events); the coordinator's attachment
# of 1.11 detaches, and attaching again combines the shard's SQL gold; the database holds the
# same extension objects as one created at 1.12.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 11
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up112
co=kl_up112_coord
topic=upgrade112.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" -c "DROP DATABASE IF EXISTS $co" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" -c "CREATE DATABASE $co" >/dev/null
for d in $db $co; do q -d $d -c "CREATE EXTENSION kafka_lake VERSION '1.11' CASCADE" >/dev/null 2>&1; done
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.11 "the extension is created at 1.11"

fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" "$@" >/dev/null 2>&1; }
fill --partitions 2 --count 600 --start 1 --bad-every 9 --date 2026-06-28
fill --partitions 2 --count 300 --start 5001 --date 2026-06-30
fill --partitions 1 --count 50 --start 7001 --date 2026-07-01
q -d $db >/dev/null <<SQL
CREATE SERVER up112_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up112', 'up112_srv', '$topic', partitions => '{1}');
SET client_min_messages = warning;
DROP ROLE IF EXISTS up112_analyst;
CREATE ROLE up112_analyst;
GRANT USAGE ON SCHEMA kafka_lake TO up112_analyst;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO up112_analyst;
GRANT SELECT, TRIGGER ON kafka_lake.up112_records TO up112_analyst;
GRANT SELECT ON kafka_lake.silver_machine_events TO up112_analyst;
SET ROLE up112_analyst;
SELECT kafka_lake.define_gold('up112', 'by_line', ARRAY['line_id'], sql => 'SELECT line_id, count(*) AS n FROM silver GROUP BY 1');
RESET ROLE;
SELECT * FROM kafka_lake.land('up112');
SELECT * FROM kafka_lake.close_date('up112', '2026-06-28');
SELECT * FROM kafka_lake.bridge('up112', '2026-06-30');
SQL
q -d $co >/dev/null <<SQL
CREATE EXTENSION postgres_fdw;
CREATE SERVER shard_one FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$PGHOST', port '$PGPORT', dbname '$db');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard_one OPTIONS (user '$PGUSER');
SELECT * FROM kafka_lake.attach_shards('up112', ARRAY['shard_one']);
SQL
is "$(q -d $db -c "\\set VERBOSITY verbose" -c "SELECT * FROM kafka_lake.close_date('up112', '2026-07-01')" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p')" \
	"P0002" "at 1.11, with this build, the shard cannot close a date it has no event of (P0002), as 1.11 could not"
list() {
	q -d $db -c "SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', source, topic, partition, \"offset\", status, fingerprint, batch_id),
	               ',' ORDER BY source, topic, partition, \"offset\")) FROM kafka_lake.coordinate_list"
}
list_before=$(list)

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.12'\" >/dev/null 2>'$KL_TMP/up112.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.12' succeeds"
[ -s "$KL_TMP/up112.err" ] && diag "$(cat "$KL_TMP/up112.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.12 "the extension is at 1.12"
is "$(list)" "$list_before" "coordinate_list lists the same $(echo "$list_before" | cut -d' ' -f1) rows"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up112')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up112', '2026-06-30')") $(q -d $db -c "SELECT status FROM kafka_lake.close_date('up112', '2026-06-28')")" \
	"skipped already_closed" "the open date bridges as before (skipped), the closed one is already_closed"
is "$(q -d $db -c "SELECT status || ' ' || selected_events FROM kafka_lake.close_date('up112', '2026-07-01')")" \
	"closed 0" "updated, the shard certifies its empty share of the date"

ok "q -d $co -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.12'\" -c \"SELECT kafka_lake.detach_shards('up112')\" >/dev/null" \
	"the coordinator updated: its attachment of 1.11 detaches"
is "$(q -d $co -c "SELECT string_agg(shard, ',') FROM kafka_lake.attach_shards('up112', ARRAY['shard_one'])" -c "SELECT sql_golds::text FROM kafka_lake.shards")
$(q -d $co -c "SELECT sum(n) FROM kafka_lake.up112_by_line WHERE business_date = '2026-06-28'")" \
	"shard_one
{\"by_line\": \"up112_analyst\"}
$(q -d $db -c "SELECT sum(n) FROM kafka_lake.by_line_current WHERE business_date = '2026-06-28'")" \
	"attached again, the shard's SQL gold is combined, with the shard's rows"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.12' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $co" -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" -c "DROP ROLE up112_analyst" >/dev/null
