#!/usr/bin/env bash
# test/t/34_threads.sh: counted from outside the backend (/proc/<pid>/task), a librdkafka handle
# created by a statement that then errors, or is cancelled, leaves no thread behind, and neither
# does land()'s helper thread when the backend errors or is cancelled while it writes.
# (14_threads and 66_land_worker count the same from inside.)  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 9
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test "$@"; }
q -c "SELECT kl_test.broker('create thr.t 1')" -c "CREATE SERVER thr_dead FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:1')" \
	-c "SELECT kafka_lake.create_source('thr_src', 'thr_dead', 'thr.t')" >/dev/null
q -c "SELECT kl_test.broker('create thr.ok 1')" -c "SELECT kl_test.server('thr_ok')" \
	-c "SELECT kafka_lake.create_source('thr_ok_src', 'thr_ok', 'thr.ok')" \
	-c "SELECT count(kafka_lake.produce('thr_ok', 'thr.ok', kl_test.event('evt-thr-' || n))) FROM generate_series(1, 600) n" >/dev/null

# one session, driven line by line; each command ends with a marker line
coproc PSQL { psql -X -A -t -q -d kl_test 2>&1; }
run() {
	local line
	printf '%s\n\\echo __done__\n' "$1" >&"${PSQL[1]}"
	while IFS= read -r line <&"${PSQL[0]}"; do
		[ "$line" = "__done__" ] && break
		printf '%s\n' "$line"
	done
}
threads() { find "/proc/$pid/task" -mindepth 1 -maxdepth 1 | wc -l; }

pid=$(run "SELECT pg_backend_pid();")
base=$(threads)
is "$base" 1 "the backend ($pid) runs one thread"

out=$(run "SELECT * FROM kafka_lake.land('thr_src', timeout => '1 s');")
ok "grep -q 'did not answer' <<<\"\$out\"" "a land against a dead broker fails"
is "$(threads)" "$base" "and leaves no thread behind"

out=$(run "SET statement_timeout = '300ms'; SELECT * FROM kafka_lake.land('thr_src', timeout => '30 s'); RESET statement_timeout;")
ok "grep -q 'canceling statement due to statement timeout' <<<\"\$out\"" "statement_timeout cancels a land"
is "$(threads)" "$base" "and leaves no thread behind"

out=$(run "SET kafka_lake.fault_injection = 'while_writing'; SELECT * FROM kafka_lake.land('thr_ok_src'); RESET kafka_lake.fault_injection;")
ok "grep -q 'fault injection: while_writing' <<<\"\$out\"" "an ERROR while the helper thread writes fails the land"
is "$(threads)" "$base" "and leaves no thread behind"

out=$(run "SET kafka_lake.fault_injection = 'cancel_while_writing'; SELECT * FROM kafka_lake.land('thr_ok_src'); RESET kafka_lake.fault_injection;")
ok "grep -q 'canceling statement due to user request' <<<\"\$out\"" "a cancel while the helper thread writes cancels the land"
is "$(threads)" "$base" "and leaves no thread behind"

run "\\q" >/dev/null 2>&1
q -c "SELECT kafka_lake.drop_source('thr_src', drop_landing => true)" -c "DROP SERVER thr_dead" \
	-c "SELECT kafka_lake.drop_source('thr_ok_src', drop_landing => true)" -c "DROP SERVER thr_ok" >/dev/null
