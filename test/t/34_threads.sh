#!/usr/bin/env bash
# test/t/34_threads.sh: counted from outside the backend (/proc/<pid>/task), a librdkafka handle
# created by a statement that then errors, or is cancelled, leaves no thread behind.  (14_threads
# counts the same from inside.)  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 5
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test "$@"; }
q -c "SELECT kl_test.broker('create thr.t 1')" -c "CREATE SERVER thr_dead FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '127.0.0.1:1')" \
	-c "SELECT kafka_lake.create_source('thr_src', 'thr_dead', 'thr.t')" >/dev/null

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

run "\\q" >/dev/null 2>&1
q -c "SELECT kafka_lake.drop_source('thr_src', drop_landing => true)" -c "DROP SERVER thr_dead" >/dev/null
