#!/usr/bin/env bash
# test/t/95_exclude_killed.sh: a backend killed with SIGKILL at each step of exclude() (after
# its unit is written in .staging, after the unit's rename, after its catalog rows), held there
# by the fault injection point pause:<step>.  After recover(), nothing is lost or counted
# twice: a unit still in .staging is gone and the record stays accepted; a renamed unit is
# adopted whole (the record excluded, its re-send promoted); the event_id is accepted once,
# the catalog lists each unit on disk once, verify() is clean, and a second exclude() answers
# at once.  Then pg_dump keeps the exclusions: restored into a new database, the same audit
# rows, letters and statuses.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
steps=(exclude_after_write exclude_after_rename exclude_after_catalog)
plan $((1 + 8 * ${#steps[@]} + 5))
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }

q "SELECT kl_test.broker('create ek95.t 2')" >/dev/null
q "SELECT kl_test.server('ek95_kafka')" >/dev/null
q "SELECT kafka_lake.create_contract('ek95', '{\"type\": \"object\", \"properties\": {\"order_id\": {\"type\": \"string\"}, \"total\": {\"type\": \"integer\"}}, \"required\": [\"order_id\"], \"event_id\": \"order_id\"}'::json)" >/dev/null
q "SELECT kafka_lake.produce('ek95_kafka', 'ek95.t', convert_to(v, 'UTF8'), partition => p)
   FROM (VALUES (1, 0, '{\"order_id\": \"ord-1\", \"total\": -1}'), (2, 0, '{\"order_id\": \"ord-2\", \"total\": 2}'),
                (3, 1, '{\"order_id\": \"ord-1\", \"total\": 1}')) t(n, p, v) ORDER BY n" >/dev/null
ok "true" "three records produced: ord-1 (wrong) and ord-2 in partition 0, ord-1 corrected in partition 1"

n=0
for step in "${steps[@]}"; do
	n=$((n + 1))
	src=ek95_$n
	case $step in exclude_after_write) adopted=0 ;; *) adopted=1 ;; esac
	q "SELECT kafka_lake.create_source('$src', 'ek95_kafka', 'ek95.t', contract => 'ek95')" >/dev/null
	q "SELECT count(*) FROM kafka_lake.land('$src')" >/dev/null
	psql -X -q -d kl_test -c "SET kafka_lake.fault_injection = 'pause:$step'" \
		-c "SELECT * FROM kafka_lake.exclude('$src', 'ord-1', reason => 'killed at $step')" >/dev/null 2>&1 &
	client=$!
	pid=
	for _ in $(seq 300); do
		pid=$(q "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Extension'
		         AND query LIKE '%exclude(''$src''%' AND pid <> pg_backend_pid()")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	ok "[ -n '$pid' ] && kill -9 $pid" "$step: the excluding backend ($pid) is killed with SIGKILL at that step"
	wait $client 2>/dev/null
	for _ in $(seq 150); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
	ok "q 'SELECT 1' >/dev/null" "$step: PostgreSQL is back after the crash"
	landing=$(q "SELECT kl_test.landing('$src')")
	is "$(q "SELECT count(*) FROM kafka_lake.exclusions JOIN kafka_lake.sources USING (source_id) WHERE source = '$src'")" 0 \
		"$step: the catalog records no exclusion (its transaction died)"
	actions=$(q "SELECT string_agg(action, ',' ORDER BY action) FROM kafka_lake.recover('$src')")
	if [ $adopted = 1 ]; then
		is "$actions" "adopted_exclusion" "$step: recover() adopts the renamed unit"
		want="excluded accepted 1 1/0"
	else
		is "$actions" "removed_staging" "$step: recover() removes the unit left in .staging"
		want="accepted duplicate_event_id 1 0/0"
	fi
	is "$(q "SELECT (SELECT string_agg(status, ',') FROM kafka_lake.${src}_records WHERE partition = 0 AND \"offset\" = 0)
	         || ' ' || (SELECT string_agg(status, ',') FROM kafka_lake.${src}_records WHERE partition = 1 AND \"offset\" = 0)
	         || ' ' || (SELECT count(*) FROM kafka_lake.${src}_records WHERE event_id = 'ord-1' AND status = 'accepted')
	         || ' ' || (SELECT partition || '/' || \"offset\" FROM kafka_lake.accepted_events
	                     WHERE event_key = kafka_lake.event_key('$src', 'ord-1'))")" "$want" \
		"$step: the statuses and accepted_events agree, ord-1 accepted once"
	is "$(q "SELECT count(*) FROM kafka_lake.exclusions JOIN kafka_lake.sources USING (source_id) WHERE source = '$src'") $(ls "$landing/exclusions" 2>/dev/null | wc -l) $(find "$landing/.staging" -mindepth 1 2>/dev/null | wc -l)" \
		"$adopted $adopted 0" "$step: each unit on disk is in the catalog once, no staging directory is left"
	is "$(q "SELECT count(*) FROM kafka_lake.verify('$src')")" 0 "$step: verify() is clean"
	if [ $adopted = 1 ]; then
		is "$(q "SELECT string_agg(action, ',') FROM kafka_lake.exclude('$src', partition => 0, \"offset\" => 0, reason => 'again')")" \
			"already_excluded" "$step: a second exclude() says it is already excluded"
	else
		is "$(q "SELECT string_agg(action, ',' ORDER BY action) FROM kafka_lake.exclude('$src', 'ord-1', reason => 'again')")" \
			"excluded,promoted" "$step: the next exclude() succeeds"
	fi
done

# two sessions excluding the same record: the second waits for the first, then says so
psql -X -q -d kl_test -c "BEGIN" \
	-c "SELECT count(*) FROM kafka_lake.exclude('ek95_1', partition => 0, \"offset\" => 1, reason => 'first')" \
	-c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null 2>&1 &
first=$!
sleep 1
is "$(q "SELECT string_agg(action, ',') FROM kafka_lake.exclude('ek95_1', partition => 0, \"offset\" => 1, reason => 'second')")" \
	"already_excluded" "a second session excluding the same record waits for the first and answers already_excluded"
wait $first

# pg_dump keeps the exclusions: a database of its own, dumped and restored into a new one
qd() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create ek95.d 2 >/dev/null
qd -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_edump_source" \
	-c "DROP DATABASE IF EXISTS kl_edump_restored" \
	-c "CREATE DATABASE kl_edump_source" -c "CREATE DATABASE kl_edump_restored" >/dev/null
qd -d kl_edump_source -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
qd -d kl_edump_source >/dev/null <<SQL
CREATE SERVER ed_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_contract('ed95', '{"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"], "event_id": "order_id"}'::json);
SELECT kafka_lake.create_source('ed_src', 'ed_srv', 'ek95.d', contract => 'ed95');
SELECT kafka_lake.produce('ed_srv', 'ek95.d', convert_to(v, 'UTF8'), partition => p)
  FROM (VALUES (1, 0, '{"order_id": "a", "n": 1}'), (2, 0, '{"order_id": "b"}'), (3, 1, '{"order_id": "a", "n": 2}')) t(n, p, v) ORDER BY n;
SELECT * FROM kafka_lake.land('ed_src');
SELECT * FROM kafka_lake.exclude('ed_src', 'a', reason => 'wrong a');
SELECT * FROM kafka_lake.exclude('ed_src', 'b', reason => 'wrong b');
SELECT * FROM kafka_lake.unexclude('ed_src', 'b', reason => 'b was right');
SQL
state() {
	qd -d "$1" -c "SELECT md5(string_agg(e::text, ',' ORDER BY e.source_id, e.seq)) FROM kafka_lake.exclusions e" \
	  -c "SELECT md5(string_agg(batch_id || statuses, ',' ORDER BY batch_id)) FROM kafka_lake.coordinates" \
	  -c "SELECT string_agg(partition || '/' || \"offset\" || ':' || status, ',' ORDER BY partition, \"offset\") FROM kafka_lake.ed_src_records"
}
before=$(state kl_edump_source)
ok "pg_dump -d kl_edump_source -f '$KL_TMP/edump.sql' 2>'$KL_TMP/edump.err'" "pg_dump dumps a database with exclusions"
ok "psql -X -q -v ON_ERROR_STOP=1 -d kl_edump_restored -f '$KL_TMP/edump.sql' >/dev/null 2>'$KL_TMP/erestore.err'" \
	"the dump restores into a new database"
[ -s "$KL_TMP/erestore.err" ] && diag "$(cat "$KL_TMP/erestore.err")"
is "$(state kl_edump_restored)" "$before" "the exclusions, the letters and the foreign table's statuses are the same"
is "$(qd -d kl_edump_restored -c "SELECT string_agg(kind || ':' || event_id, ',' ORDER BY seq) FROM kafka_lake.exclusions")" \
	"exclude:a,exclude:b,unexclude:b" "the audit rows are kept, the unexclude too"
qd -d postgres -c "DROP DATABASE kl_edump_restored" -c "DROP DATABASE kl_edump_source" >/dev/null
