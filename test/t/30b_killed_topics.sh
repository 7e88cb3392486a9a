#!/usr/bin/env bash
# test/t/30b_killed_topics.sh: a backend killed with SIGKILL in the middle of the landing of a
# source of two topics whose event_ids overlap (I1, I2, I3, I5).  After the next land, the
# coordinates of each topic, the accepted records (which copy of an event_id, on which topic)
# and each topic's committed offsets equal those of a source of the same topics landed without
# the kill; accepted_events names the second topic's coordinates; no staging directory is left;
# verify reports nothing.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 9
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }

q "SELECT kl_test.broker('create kill30b.a 2')" >/dev/null
q "SELECT kl_test.broker('create kill30b.b 2')" >/dev/null
q "SELECT kl_test.server('k30b_srv')" >/dev/null
q "SELECT kafka_lake.create_source('k30b_ref', 'k30b_srv', 'kill30b.a,kill30b.b')" >/dev/null
q "SELECT kafka_lake.create_source('k30b_src', 'k30b_srv', 'kill30b.a,kill30b.b')" >/dev/null
# event_ids 1..40000 on kill30b.a, 20001..60000 on kill30b.b: 20,000 on both
q "SELECT kl_test.fill('kill30b.a', 40000, 2, 1)" >/dev/null
q "SELECT kl_test.fill('kill30b.b', 40000, 2, 20001)" >/dev/null
is "$(q "SELECT sum(records) || ' ' || sum(accepted) || ' ' || sum(duplicates) FROM kafka_lake.land('k30b_ref', max_records => 1000000)")" \
	"80000 60000 20000" "the reference run lands 80,000 records: 60,000 event_ids, 20,000 copies on the second topic"

landing=$(q "SELECT kl_test.landing('k30b_src')")
psql -X -q -d kl_test -c "SET kafka_lake.batch_max_records = 1000" \
	-c "SELECT count(*) FROM kafka_lake.land('k30b_src', max_records => 1000000)" >/dev/null 2>&1 &
client=$!
# kill it once the second topic has batches on disk
for _ in $(seq 400); do
	n=$(find "$landing/topic=kill30b.b" -maxdepth 2 -name 'batch=*' 2>/dev/null | wc -l)
	[ "$n" -ge 5 ] && break
	sleep 0.05
done
pid=$(q "SELECT pid FROM pg_stat_activity WHERE query LIKE '%land(''k30b_src''%' AND pid <> pg_backend_pid()")
ok "[ -n '$pid' ] && kill -9 $pid" "the landing backend ($pid) is killed with SIGKILL after $n batches of the second topic"
wait $client 2>/dev/null
for _ in $(seq 100); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
ok "q 'SELECT 1' >/dev/null" "PostgreSQL is back after the crash"

q "SELECT * FROM kafka_lake.land('k30b_src', max_records => 1000000)" >/dev/null
coords() {
	q "SELECT md5(string_agg(topic || '/' || partition || '/' || \"offset\" || '/' || fingerprint || '/' || status, ','
	                         ORDER BY topic, partition, \"offset\")) FROM kafka_lake.coordinate_list WHERE source = '$1'"
}
is "$(coords k30b_src)" "$(coords k30b_ref)" "each topic's coordinates, with their fingerprints and statuses, equal the reference"
accepted() {
	q "SELECT count(*) || ' ' || md5(string_agg(topic || '/' || partition || '/' || \"offset\" || '/' || event_id, ','
	                                           ORDER BY topic, partition, \"offset\"))
	     FROM kafka_lake.$1_records WHERE status = 'accepted'"
}
is "$(accepted k30b_src)" "$(accepted k30b_ref)" "the same 60,000 records are accepted, each event_id once, on the same topic"
is "$(q "SELECT count(*) FROM kafka_lake.accepted_events a JOIN kafka_lake.sources s USING (source_id)
         WHERE s.source = 'k30b_src' AND a.topic = 'kill30b.b'")" 20000 \
	"accepted_events names the second topic for its 20,000 event_ids of its own"
is "$(q "SELECT string_agg(topic || ':' || partition || ':' || committed_offset, ',' ORDER BY topic, partition) FROM kafka_lake.lag('k30b_src')")" \
	"$(q "SELECT string_agg(topic || ':' || partition || ':' || committed_offset, ',' ORDER BY topic, partition) FROM kafka_lake.lag('k30b_ref')")" \
	"each topic's committed offsets equal the reference"
is "$(find "$landing/.staging" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" 0 "no staging directory is left"
is "$(q "SELECT count(*) FROM kafka_lake.verify('k30b_src')")" 0 "verify reports nothing"
