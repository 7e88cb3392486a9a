#!/usr/bin/env bash
# test/t/90_compact_killed.sh: a backend killed with SIGKILL at each step of compact() (after the
# new batch is written, after its rename, after the catalog swap, in the commit before the
# replaced directories go, and after the first of them went).  The fault injection point
# pause:<step> holds the backend there (wait event "Extension") until it is killed; PostgreSQL
# restarts every backend after such a crash, so this runs from the shell.  After recover(),
# exactly one copy of every coordinate is visible: the catalog lists each coordinate once, the
# disk holds it in one batch directory, the foreign table reads what a landing without
# compaction reads, and verify() is clean; a swap that committed stays committed, one that did
# not is gone.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
steps=(compact_after_write compact_after_rename compact_after_catalog compact_before_remove compact_during_remove)
plan $((1 + 9 * ${#steps[@]}))
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }

q "SELECT kl_test.broker('create ck90.t 2')" >/dev/null
q "SELECT kl_test.server('ck90_kafka')" >/dev/null
q "SELECT kl_test.fill('ck90.t', 400, 2, 1, '--bad-every 11')" >/dev/null
q "SELECT kafka_lake.create_source('ck90_ref', 'ck90_kafka', 'ck90.t')" >/dev/null
q "SELECT kafka_lake.set_compression('ck90_ref', 'none')" >/dev/null  # plain JSONL: the test reads the files' bytes
is "$(q "SELECT sum(records) FROM kafka_lake.land('ck90_ref')")" 400 "the reference run lands 400 records"

# every coordinate of the batch directories on disk: how many, how many distinct
disk() {
	q "SELECT count(*) || ' ' || count(DISTINCT (e->>'partition', e->>'offset', e->>'fingerprint'))
	   FROM (VALUES (0), (1)) v(part),
	        LATERAL pg_ls_dir(kl_test.landing('$1') || '/topic=ck90.t/partition=' || part) d,
	        LATERAL json_array_elements(pg_read_file(kl_test.landing('$1') || '/topic=ck90.t/partition=' ||
	                                                 part || '/' || d || '/manifest.json')::json->'entries') e"
}
# rows of a source's foreign table that the reference does not read, both ways
differ() {
	q "SELECT (SELECT count(*) FROM (SELECT partition, \"offset\", status, fingerprint, event_id, event::text, raw_value
	                                  FROM kafka_lake.${1}_records
	                                  EXCEPT ALL SELECT partition, \"offset\", status, fingerprint, event_id, event::text, raw_value
	                                  FROM kafka_lake.ck90_ref_records) a)
	         + (SELECT count(*) FROM (SELECT partition, \"offset\", status, fingerprint, event_id, event::text, raw_value
	                                  FROM kafka_lake.ck90_ref_records
	                                  EXCEPT ALL SELECT partition, \"offset\", status, fingerprint, event_id, event::text, raw_value
	                                  FROM kafka_lake.${1}_records) b)"
}

n=0
for step in "${steps[@]}"; do
	n=$((n + 1))
	src=ck90_$n
	case $step in compact_before_remove | compact_during_remove) committed=1 ;; *) committed=0 ;; esac
	# what the disk holds when the backend dies (the coordinates of every batch directory)
	# (before the commit, the first partition's compaction is where it stops)
	case $step in
	compact_after_write) on_disk=400 ;;       # the new batch is still in .staging
	compact_after_rename | compact_after_catalog) on_disk=600 ;;  # partition 0 twice
	compact_before_remove) on_disk=800 ;;     # both partitions twice
	compact_during_remove) on_disk=780 ;;     # the same, but the first replaced batch
	esac
	q "SELECT kafka_lake.create_source('$src', 'ck90_kafka', 'ck90.t')" >/dev/null
	q "SELECT kafka_lake.set_compression('$src', 'none')" >/dev/null
	psql -X -q -d kl_test -c "SET kafka_lake.batch_max_records = 20" \
		-c "SELECT count(*) FROM kafka_lake.land('$src')" >/dev/null
	psql -X -q -d kl_test -c "SET kafka_lake.fault_injection = 'pause:$step'" \
		-c "SELECT count(*) FROM kafka_lake.compact('$src')" >/dev/null 2>&1 &
	client=$!
	pid=
	for _ in $(seq 300); do
		pid=$(q "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Extension'
		         AND query LIKE '%compact(''$src'')%' AND pid <> pg_backend_pid()")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	ok "[ -n '$pid' ] && kill -9 $pid" "$step: the compacting backend ($pid) is killed with SIGKILL at that step"
	wait $client 2>/dev/null
	for _ in $(seq 150); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
	ok "q 'SELECT 1' >/dev/null" "$step: PostgreSQL is back after the crash"

	if [ $committed = 1 ]; then
		is "$(q "SELECT string_agg(landed_by || ':' || record_count, ',' ORDER BY partition) FROM kafka_lake.batches
		         JOIN kafka_lake.sources USING (source_id) WHERE source = '$src'")" "compact:200,compact:200" \
			"$step: the swap committed: the catalog lists the two compacted batches"
	else
		is "$(q "SELECT count(*) FROM kafka_lake.batches JOIN kafka_lake.sources USING (source_id)
		         WHERE source = '$src' AND landed_by = 'land'")" 20 \
			"$step: the swap did not commit: the catalog lists the 20 landed batches"
	fi
	is "$(disk $src | cut -d' ' -f1)" $on_disk "$step: the disk holds $on_disk coordinates of batch directories when it dies"
	q "SELECT count(*) FROM kafka_lake.recover('$src')" >/dev/null
	is "$(disk $src)" "400 400" "$step: after recover() the disk holds every coordinate once"
	extra=$(q "SELECT count(*) FROM (SELECT partition, \"offset\", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = '$src'
	                              EXCEPT SELECT partition, \"offset\", status, fingerprint FROM kafka_lake.coordinate_list WHERE source = 'ck90_ref') d")
	is "$extra $(q "SELECT count(*) FROM kafka_lake.coordinate_list WHERE source = '$src'")" "0 400" \
		"$step: the catalog lists every coordinate once, with its fingerprint and status"
	is "$(differ $src)" 0 "$step: the foreign table reads what a landing without compaction reads"
	is "$(q "SELECT count(*) FROM kafka_lake.verify('$src')") $(find "$(q "SELECT kl_test.landing('$src')")/.staging" -mindepth 1 2>/dev/null | wc -l)" \
		"0 0" "$step: verify() is clean and no staging directory is left"
	if [ $committed = 1 ]; then
		is "$(q "SELECT count(*) FROM kafka_lake.compact('$src')")" 0 "$step: a second compact() has nothing to do"
	else
		is "$(q "SELECT count(*) FROM kafka_lake.compact('$src')")" 2 "$step: the next compact() succeeds"
	fi
done
