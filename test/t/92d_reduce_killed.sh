#!/usr/bin/env bash
# test/t/92d_reduce_killed.sh: a backend killed with SIGKILL at each step of the reduction of an
# expired batch's manifest (after the reduced manifest is written, after the catalog says so, and
# in the commit before the manifest it replaces goes).  The batch's event_ids are past the dedupe
# horizon, so one expire() expires it, prunes them and reduces it, in one transaction; the fault
# injection point pause:<step> holds the backend there (wait event "Extension") until it is
# killed.  After recover(): before the commit nothing happened (the batch is whole, not expired,
# and neither its EXPIRED marker nor a reduced manifest is left), after it the batch is expired
# and reduced and its directory holds its marker and its reduced manifest only; either way
# verify() is clean, every coordinate is known with its status, a replay finds them reused, and
# the next expire() finishes what did not commit.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
steps=(reduce_after_write reduce_after_catalog reduce_before_remove)
plan $((1 + 8 * ${#steps[@]}))
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }

q "SELECT kl_test.broker('create rk92.t 1')" >/dev/null
q "SELECT kl_test.server('rk92_kafka')" >/dev/null
q "SELECT kl_test.fill('rk92.t', 300, 1, 1, '--bad-every 11 --date 2026-06-01')" >/dev/null
ok "true" "the topic holds 300 records of 2026-06-01"

n=0
for step in "${steps[@]}"; do
	n=$((n + 1))
	src=rk92_$n
	case $step in reduce_before_remove) committed=1 ;; *) committed=0 ;; esac
	q "SELECT kafka_lake.create_source('$src', 'rk92_kafka', 'rk92.t')" >/dev/null
	q "SELECT kafka_lake.set_dedupe_horizon('$src', '30 days')" >/dev/null
	q "SELECT count(*) FROM kafka_lake.land('$src')" >/dev/null
	q "SELECT count(*) FROM kafka_lake.close_date('$src', '2026-06-01')" >/dev/null
	dir="$(q "SELECT kl_test.landing('$src')")/topic=rk92.t/partition=0/batch=$(q "SELECT batch_id FROM kafka_lake.batches
	       JOIN kafka_lake.sources USING (source_id) WHERE source = '$src'")"
	coords=$(q "SELECT md5(string_agg(\"offset\" || status, ',' ORDER BY \"offset\")) FROM kafka_lake.coordinate_list WHERE source = '$src'")
	psql -X -q -d kl_test -c "SET kafka_lake.fault_injection = 'pause:$step'" \
		-c "SELECT count(*) FROM kafka_lake.expire('$src', before => '2026-07-01')" >/dev/null 2>&1 &
	client=$!
	pid=
	for _ in $(seq 300); do
		pid=$(q "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Extension'
		         AND query LIKE '%expire(''$src''%' AND pid <> pg_backend_pid()")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	ok "[ -n '$pid' ] && kill -9 $pid" "$step: the expiring backend ($pid) is killed with SIGKILL at that step"
	wait $client 2>/dev/null
	for _ in $(seq 150); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
	ok "q 'SELECT 1' >/dev/null" "$step: PostgreSQL is back after the crash"
	q "SELECT count(*) FROM kafka_lake.recover('$src')" >/dev/null
	state=$(q "SELECT (expired_at IS NOT NULL)::text || ' ' || (reduced_at IS NOT NULL)::text FROM kafka_lake.batches
	           JOIN kafka_lake.sources USING (source_id) WHERE source = '$src'")
	if [ $committed = 1 ]; then
		is "$state $(ls "$dir" | tr '\n' ' ')" "true true EXPIRED manifest.reduced.json.zst " \
			"$step: the expiry and the reduction committed: after recover() the directory holds the marker and the reduced manifest only"
	else
		is "$state $(ls "$dir" | tr '\n' ' ')" "false false accepted.jsonl.zst duplicates.jsonl.zst manifest.json.zst quarantine.jsonl.zst " \
			"$step: nothing committed: after recover() the batch is whole, without marker or reduced manifest"
	fi
	is "$(q "SELECT count(*) FROM kafka_lake.verify('$src')")" 0 "$step: verify() is clean"
	is "$(q "SELECT md5(string_agg(\"offset\" || status, ',' ORDER BY \"offset\")) FROM kafka_lake.coordinate_list WHERE source = '$src'")" \
		"$coords" "$step: every coordinate is known, with its status"
	is "$(q "SELECT status || ' ' || reused FROM kafka_lake.replay('$src', 0, 0, 299)")" "reused 300" \
		"$step: a replay finds the 300 coordinates reused"
	if [ $committed = 1 ]; then
		is "$(q "SELECT count(*) FROM kafka_lake.expire('$src', before => '2026-07-01')")" 0 \
			"$step: the next expire() has nothing to do"
	else
		is "$(q "SELECT string_agg(status, ',' ORDER BY status) FROM kafka_lake.expire('$src', before => '2026-07-01')")" \
			"event_ids_pruned,expired,reduced" "$step: the next expire() expires, prunes and reduces"
	fi
	is "$(q "SELECT count(*) FROM kafka_lake.verify('$src')") $(ls "$dir" | tr '\n' ' ')" "0 EXPIRED manifest.reduced.json.zst " \
		"$step: in the end the batch is expired and reduced, and verify() is clean"
done
