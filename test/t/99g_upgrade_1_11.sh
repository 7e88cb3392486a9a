#!/usr/bin/env bash
# test/t/99g_upgrade_1_11.sh: a database created at kafka_lake 1.10 keeps everything it landed,
# bridged and closed through ALTER EXTENSION kafka_lake UPDATE TO '1.11',
# which adds the partitions a source owns.  At 1.10: a source landed, a date closed, another
# bridged, create_source granted to a role.  After the update: coordinate_list and verify() are
# the same, the bridge of the open date is skipped (same source_hash), the source owns every
# partition (sources.partitions NULL, source_status owned), create_source gains partitions and
# keeps its grant; set_partitions() on the updated source makes land() land only those; and the
# database holds the same extension objects as one created at 1.11.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 11
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up111
topic=upgrade111.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.10' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.10 "the extension is created at 1.10"

fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 2 "$@" >/dev/null 2>&1; }
fill --count 600 --start 1 --bad-every 9 --date 2026-06-28
fill --count 300 --start 5001 --date 2026-06-30
q -d $db >/dev/null <<SQL
CREATE SERVER up111_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('up111', 'up111_srv', '$topic');
SELECT * FROM kafka_lake.land('up111');
SELECT * FROM kafka_lake.close_date('up111', '2026-06-28');
SELECT * FROM kafka_lake.bridge('up111', '2026-06-30');
DROP ROLE IF EXISTS up111_maker;
CREATE ROLE up111_maker;
GRANT EXECUTE ON FUNCTION kafka_lake.create_source(text, text, text, text, text) TO up111_maker;
SQL
list() {
	q -d $db -c "SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', source, topic, partition, \"offset\", status, fingerprint, batch_id),
	               ',' ORDER BY source, topic, partition, \"offset\")) FROM kafka_lake.coordinate_list"
}
list_before=$(list)

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.11'\" >/dev/null 2>'$KL_TMP/up111.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.11' succeeds"
[ -s "$KL_TMP/up111.err" ] && diag "$(cat "$KL_TMP/up111.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.11 "the extension is at 1.11"
is "$(q -d $db -c "SELECT string_agg(has_function_privilege(r, 'kafka_lake.create_source(text, text, text, text, text, integer[])', 'EXECUTE')::text, ' ' ORDER BY r)
                     FROM unnest(ARRAY['up111_maker', 'public']) r")" \
	"false true" "create_source gains partitions: whoever could execute it still can, PUBLIC still cannot"
is "$(list)" "$list_before" "coordinate_list lists the same $(echo "$list_before" | cut -d' ' -f1) rows"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('up111')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT run_status FROM kafka_lake.bridge('up111', '2026-06-30')")" skipped \
	"the open date bridges as before: the same input, skipped"
is "$(q -d $db -c "SELECT coalesce(s.partitions::text, 'NULL') || ' ' || string_agg(st.partition || ':' || st.owned, ',' ORDER BY st.partition)
                     FROM kafka_lake.sources s JOIN kafka_lake.source_status st USING (source)
                    WHERE s.source = 'up111' GROUP BY s.partitions")" \
	"NULL 0:true,1:true" "the source owns every partition, as before"

fill --count 100 --start 9001 --date 2026-07-01
q -d $db -c "SELECT kafka_lake.set_partitions('up111', '{1}')" >/dev/null
is "$(q -d $db -c "SELECT string_agg(partition || ':' || status, ',' ORDER BY partition) FROM kafka_lake.land('up111')")" \
	"1:landed" "set_partitions() on the updated source: land() lands partition 1 alone"
is "$(q -d $db -c "SELECT string_agg(partition || ':' || lag, ',' ORDER BY partition) FROM kafka_lake.lag('up111')")" \
	"1:0" "lag() answers for the owned partition"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.11' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" -c "DROP ROLE up111_maker" >/dev/null
