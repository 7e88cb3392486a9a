#!/usr/bin/env bash
# test/t/57b_export_killed.sh: a backend killed with SIGKILL while export() replaces a date's
# files with a newer snapshot's: after every file is written in staging (export_after_write), and
# after the first relation's date directory was swapped in (export_after_swap).  The fault
# injection point pause:<step> holds the backend there (wait event "Extension") until it is
# killed.  After the crash: every relation's date directory holds one whole file, of the old
# snapshot or of the new one (its key-value metadata says which), and DuckDB reads in it exactly
# the rows PostgreSQL holds for that snapshot; no partial file is in a date directory; the JSON
# still names the old snapshot; what the killed call wrote is left in staging only.  The next
# export() writes the new snapshot, clears staging, and the JSON names it.  Then two sessions:
# a second export of the source waits for the first one's lock, and exports once the first is
# cancelled.  Needs the broker, node and test/parquet's packages.
source "$(dirname "$0")/../lib/tap.sh"
steps=(export_after_write export_after_swap)
plan $((4 + 7 * ${#steps[@]}))
exp=$KL_TMP/export57b
rm -rf "$exp" && mkdir -p "$exp" && chown postgres "$exp"
export PGOPTIONS="-c kafka_lake.export_dir=$exp"
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }
source "$(dirname "$0")/../parquet/lib.sh"
tree=$exp/ex57b
json=$tree/_snapshots/business_date=2026-06-01.json
json_snapshot() { python3 -c "import json; print(json.load(open('$json'))['snapshot_id'])"; }
file_snapshot() {
	pq_reader meta "$1" | python3 -c "import json, sys
m = json.load(sys.stdin)
print(next(kv['value'] for kv in m['kv_metadata'] if kv['key'] == 'kafka_lake.snapshot_id'))"
}
# the backend paused in an export of the source (wait event "Extension"), once it is there
paused_pid() {
	local pid=
	for _ in $(seq 300); do
		pid=$(q "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Extension'
		         AND query LIKE '%export(''ex57b''%' AND pid <> pg_backend_pid()")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	echo "$pid"
}
bridge_more() {
	q "SELECT kl_test.fill('ex57b.t', 50, 1, $1, '--date 2026-06-01')" >/dev/null
	q "SELECT count(*) FROM kafka_lake.land('ex57b')" >/dev/null
	q "SELECT snapshot_status FROM kafka_lake.bridge('ex57b', '2026-06-01')" >/dev/null
	q "SELECT snapshot_id FROM kafka_lake.snapshots JOIN kafka_lake.sources USING (source_id) WHERE source = 'ex57b' AND is_current"
}

q "SELECT kl_test.broker('create ex57b.t 1')" >/dev/null
q "SELECT kl_test.server('ex57b_srv')" >/dev/null
q "SELECT kafka_lake.create_source('ex57b', 'ex57b_srv', 'ex57b.t')" >/dev/null
first=$(bridge_more 1)
q "SELECT count(*) FROM kafka_lake.export('ex57b', '2026-06-01')" >/dev/null
is "$(json_snapshot)" "$first" "the date's first snapshot is exported"

n=0
for step in "${steps[@]}"; do
	n=$((n + 1))
	old=$(json_snapshot)
	new=$(bridge_more $((1000 * n)))
	psql -X -q -d kl_test -c "SET kafka_lake.fault_injection = 'pause:$step'" \
		-c "SELECT count(*) FROM kafka_lake.export('ex57b', '2026-06-01')" >/dev/null 2>&1 &
	client=$!
	pid=$(paused_pid)
	ok "[ -n '$pid' ] && kill -9 $pid" "$step: the exporting backend ($pid) is killed with SIGKILL at that step"
	wait $client 2>/dev/null
	for _ in $(seq 150); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
	case $step in
		export_after_write) want="gold_daily_line_metrics $old silver_machine_events $old" ;;
		export_after_swap) want="gold_daily_line_metrics $old silver_machine_events $new" ;;
	esac
	got=
	for rel in gold_daily_line_metrics silver_machine_events; do
		got="$got${got:+ }$rel $(file_snapshot "$tree/$rel/business_date=2026-06-01/part-00000.parquet")"
	done
	is "$got" "$want" "$step: each relation holds one whole file, of the old snapshot or the new one"
	whole=1
	for rel in gold_daily_line_metrics silver_machine_events; do
		f=$tree/$rel/business_date=2026-06-01/part-00000.parquet
		s=$(file_snapshot "$f")
		if [ $rel = silver_machine_events ]; then
			where="run_id = (SELECT run_id FROM kafka_lake.snapshots WHERE snapshot_id = $s)"
		else
			where="snapshot_id = $s"
		fi
		[ "$(pq_file_rows duckdb "$f")" = "$(pq_pg_rows $rel "$where")" ] || whole=0
		[ "$(ls -A "$tree/$rel/business_date=2026-06-01" | tr '\n' ' ')" = ".kafka_lake_export part-00000.parquet " ] || whole=0
	done
	ok "[ $whole = 1 ]" "$step: DuckDB reads in each the rows PostgreSQL holds for its snapshot, and nothing else is there"
	is "$(json_snapshot)" "$old" "$step: the JSON still names the old snapshot"
	ok "[ -n \"\$(ls -A '$tree/.staging' | grep -v '^\.kafka_lake_export$')\" ]" "$step: what the killed call wrote is in staging"
	is "$(q "SELECT string_agg(relation || ' ' || status, ',' ORDER BY relation) FROM kafka_lake.export('ex57b', '2026-06-01')")" \
		"gold_daily_line_metrics exported,silver_machine_events exported" "$step: the next export() writes the new snapshot"
	got=
	for rel in gold_daily_line_metrics silver_machine_events; do
		got="$got $(file_snapshot "$tree/$rel/business_date=2026-06-01/part-00000.parquet")"
	done
	is "$(json_snapshot)$got $(ls -A "$tree/.staging" | tr '\n' ' ')" "$new $new $new .kafka_lake_export " \
		"$step: the JSON and both files are the new snapshot's, and staging is clear"
done

# a second session's export of the source waits for the first one's lock (lock space 0x4B45),
# then exports; the first, cancelled at its pause, leaves its staging directory to it
new=$(bridge_more 9000)
psql -X -q -d kl_test -c "SET kafka_lake.fault_injection = 'pause:export_after_write'" \
	-c "SELECT count(*) FROM kafka_lake.export('ex57b', '2026-06-01')" >/dev/null 2>&1 &
first=$!
pid=$(paused_pid)
q "SELECT string_agg(relation || ' ' || status, ',' ORDER BY relation) FROM kafka_lake.export('ex57b', '2026-06-01')" >"$KL_TMP/57b.second" 2>&1 &
second=$!
waiting=
for _ in $(seq 100); do
	waiting=$(q "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 19269 AND NOT granted")
	[ "$waiting" = 1 ] && break
	sleep 0.1
done
is "$waiting" 1 "a second export of the source waits for the first one's lock"
q "SELECT pg_cancel_backend($pid)" >/dev/null
wait $first $second
is "$(cat "$KL_TMP/57b.second")" "gold_daily_line_metrics exported,silver_machine_events exported" \
	"once the first is cancelled, the second exports"
is "$(json_snapshot) $(ls -A "$tree/.staging" | tr '\n' ' ')" "$new .kafka_lake_export " \
	"the JSON names the new snapshot, and the cancelled call's staging is gone"
