#!/usr/bin/env bash
# test/t/98b_topics_dump.sh: pg_dump keeps a source of several topics.  A database with a source
# of two topics, landed, bridged and closed, dumped and restored into a new database, reads the
# same records with their topics, keeps accepted_events' topic and the certificate's rows per
# topic, verifies clean, and, once it has claimed the landing the dumped database left, finds the
# date already closed and lands what came after the dump (event_ids already accepted on either
# topic are duplicates).  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 8
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

q -d kl_test -c "SELECT kl_test.broker('create dump98b.a 2')" -c "SELECT kl_test.broker('create dump98b.b 1')" \
	-c "SELECT kl_test.fill('dump98b.a', 600, 2, 1)" -c "SELECT kl_test.fill('dump98b.b', 400, 1, 401)" >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_tdump_source" \
	-c "DROP DATABASE IF EXISTS kl_tdump_restored" -c "CREATE DATABASE kl_tdump_source" -c "CREATE DATABASE kl_tdump_restored" >/dev/null
q -d kl_tdump_source -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
q -d kl_tdump_source -c "CREATE SERVER td_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" \
	-c "SELECT kafka_lake.create_source('td98b', 'td_srv', 'dump98b.a,dump98b.b')" \
	-c "SELECT count(*) FROM kafka_lake.land('td98b')" \
	-c "SELECT status FROM kafka_lake.close_date('td98b', '2026-06-29')" >/dev/null
state() {
	q -d "$1" -c "SELECT (SELECT md5(string_agg(topic || '/' || partition || '/' || \"offset\" || '/' || status, ',' ORDER BY topic, partition, \"offset\"))
	                        FROM kafka_lake.td98b_records) || ' ' ||
	                      (SELECT count(*) || '/' || count(topic) FROM kafka_lake.accepted_events) || ' ' ||
	                      (SELECT string_agg(topic || ':' || partition || ':' || through_offset, ',' ORDER BY topic, partition)
	                         FROM kafka_lake.date_closing_partitions)"
}
before=$(state kl_tdump_source)

ok "pg_dump -d kl_tdump_source -f '$KL_TMP/tdump.sql' 2>'$KL_TMP/tdump.err'" "pg_dump dumps a database with a source of two topics"
ok "psql -X -q -v ON_ERROR_STOP=1 -d kl_tdump_restored -f '$KL_TMP/tdump.sql' >/dev/null 2>'$KL_TMP/trestore.err'" \
	"the dump restores into a new database"
[ -s "$KL_TMP/trestore.err" ] && diag "$(head -5 "$KL_TMP/trestore.err")"
is "$(state kl_tdump_restored)" "$before" \
	"the records with their topics, accepted_events' topics and the certificate's rows per topic are the same"
is "$(q -d kl_tdump_restored -c "SELECT count(*) FROM kafka_lake.verify('td98b')")" 0 "verify is clean in the restored database"
# the dumped database goes; the restored one claims the landing it left
q -d postgres -c "DROP DATABASE kl_tdump_source" >/dev/null
ok "q -d kl_tdump_restored -c \"SELECT status FROM kafka_lake.claim_landing('td98b')\" >/dev/null" \
	"the restored database claims the landing"
is "$(q -d kl_tdump_restored -c "SELECT status || ' ' || partitions FROM kafka_lake.close_date('td98b', '2026-06-29')")" \
	"already_closed 3" "the closed date is already closed there, over its three partitions"
q -d kl_test -c "SELECT kl_test.fill('dump98b.b', 10, 1, 1)" >/dev/null
is "$(q -d kl_tdump_restored -c "SELECT sum(accepted) || ' ' || sum(duplicates) FROM kafka_lake.land('td98b')")" "0 10" \
	"what came after the dump lands in the restored database: event_ids of the other topic are duplicates"
is "$(q -d kl_tdump_restored -c "SELECT count(*) FROM kafka_lake.verify('td98b')")" 0 "and verify is still clean"

q -d postgres -c "DROP DATABASE kl_tdump_restored" >/dev/null
