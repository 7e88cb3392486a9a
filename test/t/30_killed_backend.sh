#!/usr/bin/env bash
# test/t/30_killed_backend.sh: a backend killed with SIGKILL in the middle of a large land (I1, I5, I8).
# PostgreSQL restarts every backend after such a crash, so this runs from the shell.  After the next
# land, the landed coordinates, the accepted set and the committed offsets equal those of a run without
# the kill; no staging directory is left; verify reports nothing.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 10
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }

q "SELECT kl_test.broker('create kill.t 4')" >/dev/null
q "SELECT kl_test.server('k_srv')" >/dev/null
q "SELECT kafka_lake.create_source('k_ref', 'k_srv', 'kill.t')" >/dev/null
q "SELECT kafka_lake.create_source('k_src', 'k_srv', 'kill.t')" >/dev/null
q "SELECT kl_test.fill('kill.t', 200000, 4)" >/dev/null
is "$(q "SELECT sum(records) FROM kafka_lake.land('k_ref', max_records => 1000000)")" 200000 \
	"the reference run lands 200,000 records"

landing=$(q "SELECT kl_test.landing('k_src')")
psql -X -q -d kl_test -c "SET kafka_lake.batch_max_records = 1000" \
	-c "SELECT count(*) FROM kafka_lake.land('k_src', max_records => 1000000)" >/dev/null 2>&1 &
client=$!
# wait until batches are on disk, then kill the backend in the middle of its work; only renamed
# batches count (a batch in .staging is not landed and is not adopted)
for _ in $(seq 300); do
	n=$(find "$landing" -mindepth 3 -maxdepth 3 -path '*/topic=*/partition=*/batch=*' 2>/dev/null | wc -l)
	[ "$n" -ge 20 ] && break
	sleep 0.05
done
pid=$(q "SELECT pid FROM pg_stat_activity WHERE query LIKE '%land(''k_src''%' AND pid <> pg_backend_pid()")
ok "[ -n '$pid' ] && kill -9 $pid" "the landing backend ($pid) is killed with SIGKILL after $n batches"
wait $client 2>/dev/null
for _ in $(seq 100); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
ok "q 'SELECT 1' >/dev/null" "PostgreSQL is back after the crash"

q "SELECT * FROM kafka_lake.land('k_src', max_records => 1000000)" >/dev/null
is "$(q "SELECT count(*) FROM (SELECT partition, \"offset\", fingerprint FROM kafka_lake.coordinate_list WHERE source = 'k_src'
                              EXCEPT SELECT partition, \"offset\", fingerprint FROM kafka_lake.coordinate_list WHERE source = 'k_ref') d")" 0 \
	"no coordinate landed that the reference does not have"
is "$(q "SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = 'k_src'")" 200000 \
	"every coordinate landed, each once"
missing=$(q "SELECT count(*) FROM (SELECT event_id FROM kafka_lake.k_ref_records WHERE status = 'accepted'
                                   EXCEPT SELECT event_id FROM kafka_lake.k_src_records WHERE status = 'accepted') d")
accepted=$(q "SELECT count(*) FROM kafka_lake.k_src_records WHERE status = 'accepted'")
is "$missing $accepted" "0 200000" "the accepted set equals the reference"
ok "[ $(q "SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
            WHERE s.source = 'k_src' AND landed_by = 'recover'") -ge 20 ]" \
	"the batches the killed transaction landed were adopted from disk"
is "$(q "SELECT string_agg(partition || ':' || committed_offset, ',' ORDER BY partition) FROM kafka_lake.lag('k_src')")" \
	"$(q "SELECT string_agg(partition || ':' || committed_offset, ',' ORDER BY partition) FROM kafka_lake.lag('k_ref')")" \
	"the committed offsets equal the reference"
is "$(find "$landing/.staging" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" 0 "no staging directory is left"
is "$(q "SELECT count(*) FROM kafka_lake.verify('k_src')")" 0 "verify reports nothing"
