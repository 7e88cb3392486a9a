#!/usr/bin/env bash
# test/t/37_drop_recreate_killed.sh: a backend killed with SIGKILL inside a transaction that
# dropped a source with drop_landing => true, re-created it and landed into the new directory
# (offsets committed to Kafka).  The transaction never committed, so the dropped source is back
# in the catalog; its files, moved aside when the new source took the directory, must come back
# too, with what the killed land wrote, and nothing may stay behind in the landing directory.
# The next land() of the source does it.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 8
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }

q "SELECT kl_test.broker('create dk37.t 1')" >/dev/null
q "SELECT kl_test.server('dk37_kafka')" >/dev/null
q "SELECT kafka_lake.create_source('dk37', 'dk37_kafka', 'dk37.t', group_id => 'dk37-group')" >/dev/null
q "SELECT kafka_lake.produce('dk37_kafka', 'dk37.t', kl_test.event('evt-dk37-a' || n)) FROM generate_series(1, 5) n" >/dev/null
q "SELECT count(*) FROM kafka_lake.land('dk37')" >/dev/null
landing=$(q "SELECT kl_test.landing('dk37')")
root=$(dirname "$landing")
old_batch=$(q "SELECT batch_id FROM kafka_lake.batches WHERE topic = 'dk37.t'")

psql -X -q -d kl_test -v ON_ERROR_STOP=1 >/dev/null 2>&1 <<'SQL' &
SET application_name = 'kl_dk37';
SET client_min_messages = warning;
BEGIN;
SELECT kafka_lake.drop_source('dk37', drop_landing => true);
SELECT kafka_lake.create_source('dk37', 'dk37_kafka', 'dk37.t', group_id => 'dk37-group');
SELECT kafka_lake.produce('dk37_kafka', 'dk37.t', kl_test.event('evt-dk37-b' || n)) FROM generate_series(1, 2) n;
SELECT count(*) FROM kafka_lake.land('dk37');
SELECT pg_sleep(600);
SQL
client=$!
pid=
for _ in $(seq 600); do
	pid=$(q "SELECT pid FROM pg_stat_activity WHERE application_name = 'kl_dk37' AND query LIKE '%pg_sleep%'")
	[ -n "$pid" ] && break
	sleep 0.05
done
ok "[ -n '$pid' ] && kill -9 $pid" "the backend ($pid) is killed after drop, create and land, before COMMIT"
wait $client 2>/dev/null
for _ in $(seq 100); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
ok "q 'SELECT 1' >/dev/null" "PostgreSQL is back after the crash"

is "$(q "SELECT batch_id FROM kafka_lake.batches WHERE topic = 'dk37.t'")" "$old_batch" \
	"the dropped source is back in the catalog with its batch"
is "$(q "SELECT status FROM kafka_lake.land('dk37')")" empty \
	"the next land() finds nothing new (the killed land committed offset 7)"
is "$(q "SELECT string_agg(\"offset\"::text, ',' ORDER BY \"offset\") FROM kafka_lake.coordinate_list WHERE source = 'dk37'")" \
	"0,1,2,3,4,5,6" "the old batch is back and the killed land's batch was adopted: offsets 0 to 6, each once"
is "$(q "SELECT count(*) FROM kafka_lake.dk37_records WHERE status = 'accepted'")" 7 "the foreign table reads all seven"
is "$(q "SELECT count(*) FROM kafka_lake.verify('dk37')")" 0 "verify() is clean"
is "$(find "$root" -name 'dk37' | grep -vx "$landing" | wc -l)" 0 "nothing of the source is left elsewhere in the landing directory"
