#!/usr/bin/env bash
# bench/storage.sh -- what the per-record state of a landing would cost in
# other shapes than today's, measured on a real landing: the design note of
# docs/internals.md ("Storage per record") takes its numbers from here.
# Sizes, not times: they do not depend on the machine.
#
#   bench/storage.sh         (env: PGHOST PGPORT PGUSER PGDATABASE
#                             KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR, as set by
#                             test/lib/env.sh; bench/run storage does all of it)
#
# Steps: fill a topic of 100 partitions with 1,000,000 seed-style events and
# land them into a new source (compressed, one batch a partition); then build,
# beside the catalog, each alternative out of the same rows, VACUUM FULL it,
# and print bytes per record:
#
#   manifest       today's manifest.json.zst; the same without each entry's
#                  fingerprint (zstd -1, one file a batch, as the landing
#                  writes); the fingerprints alone as a binary sidecar (32
#                  bytes each, incompressible)
#   coordinates    today's table (32 bytes of fingerprint a record); the same
#                  with the first 8 bytes of each fingerprint; with none
#   accepted_events today's (a row and a B-tree entry per event_id, with its
#                  coordinate); a row of the key alone (uuid PRIMARY KEY plus
#                  source_id); the keys of a batch packed in one row (uuid[])
#                  with a GIN index over them (no uniqueness: what a packed
#                  shape would cost before its locking)
#   expired batch  what an expired batch would keep if its manifest were
#                  reduced to its offset ranges, its statuses (run-length),
#                  one SHA-256 over its fingerprints and the first 4 bytes of
#                  each (zstd -1)
#
# Settings: KL_BENCH_COUNT (default 1000000), KL_BENCH_PARTITIONS (100).
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/storage.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

COUNT=${KL_BENCH_COUNT:-1000000}
PARTITIONS=${KL_BENCH_PARTITIONS:-100}
SOURCE=bench_storage
TOPIC=bench.storage.$(date +%s)
psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }

psql_q <<-SQL
	CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
	DROP SERVER IF EXISTS bench_storage_kafka CASCADE;
	CREATE SERVER bench_storage_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SQL
log "filling topic $TOPIC: $COUNT events over $PARTITIONS partitions"
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS" >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" \
	--partitions "$PARTITIONS" 2>/dev/null
log "landing"
psql_q <<-SQL
	SELECT FROM kafka_lake.create_source('$SOURCE', 'bench_storage_kafka', '$TOPIC') \\g /dev/null
	SET kafka_lake.batch_max_records = 1000000;
	SET kafka_lake.batch_max_bytes = '256MB';
	SELECT format('%s batches, %s records', count(*), sum(records))
	  FROM kafka_lake.land('$SOURCE', max_records => $COUNT * 2, timeout => '30 min')
	 WHERE status = 'landed' \gset
	\echo :format
SQL
landing_dir=$(psql_q -At -c "SELECT current_setting('data_directory')")/kafka_lake/$SOURCE
per_r() { echo "scale=1; $1 / $COUNT" | bc; }

log "manifests"
manifest_now=$(find "$landing_dir" -name manifest.json.zst -printf '%s\n' | awk '{s += $1} END {print s + 0}')
manifest_nofp=0
for m in $(find "$landing_dir" -name manifest.json.zst); do
	n=$(zstdcat "$m" | jq -c 'del(.entries[].fingerprint)' | zstd -q -1 -c | wc -c)
	manifest_nofp=$(( manifest_nofp + n ))
done
# the reduced manifest of an expired batch: ranges, statuses run-length, a digest, 4-byte prefixes
expired=$(find "$landing_dir" -name manifest.json.zst | python3 -c '
import hashlib, json, subprocess, sys
total = 0
for path in sys.stdin.read().split():
    m = json.loads(subprocess.run(["zstdcat", path], capture_output=True, check=True).stdout)
    ranges, runs, fps = [], [], b""
    for e in m["entries"]:
        o, s = e["offset"], e["status"][0]
        if ranges and ranges[-1][1] + 1 == o:
            ranges[-1][1] = o
        else:
            ranges.append([o, o])
        if runs and runs[-1][0] == s:
            runs[-1][1] += 1
        else:
            runs.append([s, 1])
        fps += bytes.fromhex(e["fingerprint"])
    head = json.dumps({"batch_id": m["batch_id"], "topic": m["topic"], "partition": m["partition"],
                       "ranges": ranges, "statuses": runs,
                       "fingerprints_sha256": hashlib.sha256(fps).hexdigest()}).encode()
    prefixes = b"".join(fps[i:i + 4] for i in range(0, len(fps), 32))
    total += len(subprocess.run(["zstd", "-q", "-1", "-c"], input=head + b"\n" + prefixes,
                                capture_output=True, check=True).stdout)
print(total)')
log "catalog"
psql_q -At <<-SQL >"${TMPDIR:-/tmp}/bench_storage.$$"
	SELECT source_id AS sid FROM kafka_lake.sources WHERE source = '$SOURCE' \gset
	DROP TABLE IF EXISTS bench_coords8, bench_coords0, bench_ids_key, bench_ids_packed;
	CREATE TABLE bench_coords8 AS
	  SELECT source_id, topic, partition, offsets, batch_id, offset_list,
	         (SELECT string_agg(substring(c.fingerprints FROM i * 32 + 1 FOR 8), ''::bytea ORDER BY i)
	            FROM generate_series(0, length(c.statuses) - 1) i) AS fingerprints, statuses
	    FROM kafka_lake.coordinates c WHERE c.source_id = :sid;
	CREATE TABLE bench_coords0 AS
	  SELECT source_id, topic, partition, offsets, batch_id, offset_list, statuses
	    FROM kafka_lake.coordinates WHERE source_id = :sid;
	ALTER TABLE bench_coords8 ADD PRIMARY KEY (source_id, batch_id),
	  ADD EXCLUDE USING gist (source_id WITH =, topic WITH =, partition WITH =, offsets WITH &&);
	ALTER TABLE bench_coords0 ADD PRIMARY KEY (source_id, batch_id),
	  ADD EXCLUDE USING gist (source_id WITH =, topic WITH =, partition WITH =, offsets WITH &&);
	CREATE TABLE bench_ids_key (event_key uuid PRIMARY KEY, source_id integer NOT NULL);
	INSERT INTO bench_ids_key SELECT event_key, source_id FROM kafka_lake.accepted_events WHERE source_id = :sid
	  ORDER BY random();
	CREATE TABLE bench_ids_packed (source_id integer, batch_id text, keys uuid[]);
	INSERT INTO bench_ids_packed
	  SELECT a.source_id, b.batch_id, array_agg(a.event_key ORDER BY a.event_key)
	    FROM kafka_lake.accepted_events a
	    JOIN kafka_lake.batches b ON b.source_id = a.source_id AND b.partition = a.partition
	     AND a."offset" BETWEEN b.first_offset AND b.last_offset
	   WHERE a.source_id = :sid GROUP BY a.source_id, b.batch_id;
	CREATE INDEX ON bench_ids_packed USING gin (keys);
	VACUUM (FULL) kafka_lake.coordinates, kafka_lake.accepted_events, bench_coords8, bench_coords0,
	  bench_ids_key, bench_ids_packed;
	SELECT 'coords_now', pg_total_relation_size('kafka_lake.coordinates');
	SELECT 'coords8', pg_total_relation_size('bench_coords8');
	SELECT 'coords0', pg_total_relation_size('bench_coords0');
	SELECT 'ids_now', pg_total_relation_size('kafka_lake.accepted_events');
	SELECT 'ids_key', pg_total_relation_size('bench_ids_key');
	SELECT 'ids_packed', pg_total_relation_size('bench_ids_packed');
	DROP TABLE bench_coords8, bench_coords0, bench_ids_key, bench_ids_packed;
SQL
val() { awk -F'|' -v k="$1" '$1 == k {print $2}' "${TMPDIR:-/tmp}/bench_storage.$$"; }

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
printf '\nper-record state of %d records in %d batches, in other shapes (bytes a record)\n' \
	"$COUNT" "$(psql_q -At -c "SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = '$SOURCE'")"
printf '  machine                             %s, %d cores (sizes do not depend on it)\n' "${cpu:-unknown CPU}" "$(nproc)"
printf '  manifest.json.zst today             %8s\n' "$(per_r "$manifest_now")"
printf '  ... without the fingerprints        %8s   (+ 32.0 for them as a binary sidecar)\n' "$(per_r "$manifest_nofp")"
printf '  expired batch, reduced              %8s   (ranges, run-length statuses, one SHA-256, 4-byte prefixes)\n' "$(per_r "$expired")"
printf '  coordinates today                   %8s   (32 bytes of fingerprint a record)\n' "$(per_r "$(val coords_now)")"
printf '  ... with 8-byte prefixes            %8s\n' "$(per_r "$(val coords8)")"
printf '  ... with no fingerprints            %8s\n' "$(per_r "$(val coords0)")"
printf '  accepted_events today               %8s   (uuid key, source, partition, offset; B-tree)\n' "$(per_r "$(val ids_now)")"
printf '  ... the key and source only         %8s\n' "$(per_r "$(val ids_key)")"
printf '  ... packed per batch, GIN           %8s   (no uniqueness)\n' "$(per_r "$(val ids_packed)")"
rm -f "${TMPDIR:-/tmp}/bench_storage.$$"
psql_q -c "SELECT kafka_lake.drop_source('$SOURCE', drop_landing => true)" >/dev/null
