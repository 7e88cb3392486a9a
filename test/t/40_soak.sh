#!/usr/bin/env bash
# test/t/40_soak.sh: a long soak of the landing under real operations (I1, I2, I3, I5, I8).
#
# Over a 12-partition topic on a broker of its own, rounds of new records (valid events, events
# whose event_id was produced before, and bad records) are landed by overlapping landers, each a
# new backend running one land() in its own transaction, as pg_cron starts its jobs (and a real
# pg_cron job lands every minute meanwhile).  Along the way: random SIGKILLs of a landing backend
# (PostgreSQL then restarts every backend), the source dropped and created again under the same
# name in one transaction, and a broker outage.  At the end the source is landed until its lag
# is 0, and:
#   * every coordinate of the topic is landed exactly once;
#   * every event_id that landed is accepted exactly once, at one coordinate;
#   * verify() is clean and no staging directory is left;
#   * no lander failed for any reason but the ones provoked: a killed backend, the broker
#     outage, a call that ran out of time, or a lander that met the source while it was
#     being dropped and created again;
#   * every process the server log says died was killed by the soak's SIGKILL (signal 9),
#     none by a crash of its own (a segfault or an abort, in a backend or one of its threads).
# Bounded in time (a few minutes at most); no assertion about time.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 10
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }
ROUNDS=${KL_SOAK_ROUNDS:-24}
# at least a minute in all, so that the pg_cron job runs during the soak
MIN_ROUND_SECONDS=${KL_SOAK_MIN_ROUND_SECONDS:-3}
work=$KL_TMP/soak
mkdir -p "$work"
log_from=$(($(stat -c %s "$KL_SERVER_LOG") + 1))
chmod 777 "$work"

bootstrap=$(q "SELECT kl_test.private_broker('soak', 'soak.t:12')")
ctl() { q "SELECT kl_test.private_ctl('soak', '$1')" >/dev/null; }
q "CREATE SERVER soak_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$bootstrap')" >/dev/null
q "SELECT kafka_lake.create_source('soak_src', 'soak_srv', 'soak.t')" >/dev/null
q "SELECT cron.schedule('soak-land', '* * * * *', \$\$SELECT * FROM kafka_lake.land('soak_src', timeout => '20 s')\$\$)" >/dev/null

produced=0
produce_round() {
	local start=$1 count=$2
	"$KL_BROKER" fill --bootstrap "$bootstrap" --topic soak.t --count "$count" --partitions 12 \
		--start "$start" --bad-every 41 >/dev/null 2>&1
	produced=$((produced + count))
}

# lander N: one land() in a new backend, its errors kept
lander() {
	psql -X -A -t -q -v VERBOSITY=verbose -d kl_test -c "SET kafka_lake.batch_max_records = 250" \
		-c "SELECT count(*) FROM kafka_lake.land('soak_src', timeout => '10 s')" \
		>/dev/null 2>>"$work/errors.$1" || echo "exit $?" >>"$work/exits.$1"
}

wait_for_postgres() {
	for _ in $(seq 150); do q "SELECT 1" >/dev/null 2>&1 && return 0; sleep 0.2; done
	return 1
}

kills=0
outage_errors=0
seq_start=1
for round in $(seq "$ROUNDS"); do
	# new events, and every third round events whose ids were produced before
	round_start=$SECONDS
	produce_round "$seq_start" 3000
	if [ $((round % 3)) = 0 ]; then
		produce_round $((seq_start - 1000)) 400
	fi
	seq_start=$((seq_start + 3000))

	[ "$round" = 8 ] && ctl "down -1"
	pids=()
	for n in 1 2 3; do
		lander "$round.$n" &
		pids+=($!)
	done
	if [ "$round" = 8 ]; then
		sleep 3
		ctl "up -1"
	fi
	if [ "$round" = 14 ]; then
		# drop and create again under the same name, in one transaction; its files stay
		psql -X -q -d kl_test -c "BEGIN" -c "SELECT kafka_lake.drop_source('soak_src')" \
			-c "SELECT kafka_lake.create_source('soak_src', 'soak_srv', 'soak.t')" -c "COMMIT" \
			>/dev/null 2>>"$work/errors.recreate" || true
	fi
	if [ $((RANDOM % 3)) = 0 ] && [ "$round" != 8 ] && [ "$round" != 14 ]; then
		sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
		pid=$(q "SELECT pid FROM pg_stat_activity WHERE query LIKE '%kafka_lake.land(''soak_src''%'
		         AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1" 2>/dev/null)
		if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
			kills=$((kills + 1))
			echo "$round" >>"$work/killed_rounds"
		fi
	fi
	for p in "${pids[@]}"; do wait "$p"; done
	wait_for_postgres
	while [ $((SECONDS - round_start)) -lt "$MIN_ROUND_SECONDS" ]; do sleep 0.2; done
done
cron_runs=$(q "SELECT count(*) FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE j.jobname = 'soak-land'")
q "SELECT cron.unschedule('soak-land')" >/dev/null
diag "$ROUNDS rounds, $produced records produced, $kills landing backends killed, $cron_runs pg_cron runs"

# land until nothing is left (bounded)
for _ in $(seq 30); do
	left=$(q "SELECT coalesce(sum(lag), -1) FROM kafka_lake.lag('soak_src')" 2>/dev/null)
	[ "$left" = 0 ] && break
	q "SELECT count(*) FROM kafka_lake.land('soak_src', timeout => '30 s')" >/dev/null 2>>"$work/errors.final"
done
is "$left" 0 "in the end every partition's lag is 0"
is "$(q "SELECT sum(high_watermark) FROM kafka_lake.lag('soak_src')")" "$produced" \
	"the topic holds every produced record"
is "$(q "SELECT count(*) || ' ' || count(DISTINCT (partition, \"offset\")) FROM kafka_lake.coordinate_list
         WHERE source = 'soak_src'")" "$produced $produced" "every coordinate landed exactly once"
is "$(q "SELECT count(*) FILTER (WHERE status = 'accepted') - count(DISTINCT event_id) FILTER (WHERE status = 'accepted')
         FROM kafka_lake.soak_src_records")" 0 "no event_id is accepted twice"
is "$(q "SELECT count(*) FROM (SELECT event_id FROM kafka_lake.soak_src_records WHERE status = 'duplicate_event_id'
                              EXCEPT SELECT event_id FROM kafka_lake.soak_src_records WHERE status = 'accepted') d")" 0 \
	"every duplicate_event_id names an event_id that is accepted"
is "$(q "SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
         WHERE s.source = 'soak_src'")" \
	"$(q "SELECT count(*) FROM kafka_lake.soak_src_records WHERE status = 'accepted'")" \
	"the catalog holds one accepted event per accepted record"
is "$(q "SELECT count(*) FROM kafka_lake.verify('soak_src')")" 0 "verify() is clean"
landing=$(q "SELECT kl_test.landing('soak_src')")
is "$(find "$landing/.staging" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" 0 "no staging directory is left"

# every failure is one the soak provoked
cat "$work"/errors.* 2>/dev/null |
	grep -E '^(psql:.*)?ERROR|FATAL|server closed|terminat|connection' |
	grep -vE 'terminating connection because of crash of another server process|connection to server on socket .* failed|server closed the connection unexpectedly|This probably means the server terminated abnormally|before or while processing the request|connection to server was lost|no connection to the server|the database system is in recovery mode|the database system is not yet accepting connections|HV00N|57014|canceling statement due to statement timeout|could not reach|brokers? .*(down|unreachable)|source "soak_src" does not exist|kafka_lake source "soak_src" was dropped' \
	>"$work/unexpected" || true
ok "[ ! -s '$work/unexpected' ]" "no lander failed but for a provoked reason"
[ -s "$work/unexpected" ] && diag "$(sort "$work/unexpected" | uniq -c | sort -rn | head -20)" && sort "$work/unexpected" | uniq -c | sort -rn | head -20 >&2
tail -c +"$log_from" "$KL_SERVER_LOG" | grep -E 'was terminated by signal|terminated by exception' |
	grep -v 'was terminated by signal 9' >"$work/crashes" || true
ok "[ ! -s '$work/crashes' ]" "every process that died was one the soak killed (signal 9)"
[ -s "$work/crashes" ] && diag "$(head -5 "$work/crashes")"
q "SELECT kl_test.private_ctl('soak', 'shutdown')" >/dev/null 2>&1 || true
