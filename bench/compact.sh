#!/usr/bin/env bash
# bench/compact.sh -- the scan over 1,000,000 events landed in 10,000 small batches, before and
# after compact(), in the same run on the same cluster; how long compact() takes; and what
# retention keeps per million records once expire() has removed the record files.
#
#   bench/compact.sh         (env: PGHOST PGPORT PGUSER PGDATABASE
#                             KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR, as set by
#                             test/lib/env.sh; bench/run compact does all of it)
#
# Steps: fill a topic of 100 partitions with 1,000,000 seed-style events (the
# test broker keeps about 5 MiB per partition, see test/broker/README.md); land
# them with kafka_lake.batch_max_records = 100, as a landing every minute of
# a quiet topic would: 100 batches of 100 events per partition, 10,000 in
# all; time
#
#   SELECT count(*), sum(units_produced) FROM <typed foreign table>
#
# KL_BENCH_RUNS times (default 5, after one untimed warm-up run), with JIT
# and parallelism off; compact() the source (one batch per partition) and
# time the same query again; print both medians and the ratio
# before / after (> 1: the compacted landing scans faster).  Then expire()
# every batch and print what is kept per 1,000,000 records: on disk (the
# manifests and the EXPIRED markers) and in the catalog (kafka_lake.batches,
# coordinates and accepted_events, with their indexes), against the bytes of
# the landing before expiry.
#
# Storage per record, printed per record against the bytes Kafka delivered
# (the sum of the record values, read with kcat's %S): the compacted
# landing on disk by kind of file (the record files, the manifests, the rest),
# as they lie (compressed: the source's default) and what they hold
# uncompressed (the catalog's raw sizes, zstdcat of the manifests); the catalog by table
# (each with its indexes, after VACUUM FULL); and both after expire().
# Then the same disk and catalog once the date is closed (close_date) and
# the source has a dedupe horizon (set_dedupe_horizon, 1 day): expire()
# removes the date's event_ids from accepted_events and reduces the expired
# batches' manifests to their offsets, statuses and fingerprint prefixes.
#
# Settings: KL_BENCH_COUNT (default 1000000), KL_BENCH_PARTITIONS (100),
# KL_BENCH_BATCH (100 records a batch), KL_BENCH_RUNS (5), KL_BENCH_COMPRESSION
# (the source's compression, set_compression; default: a new source's, zstd).
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/compact.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

COUNT=${KL_BENCH_COUNT:-1000000}
PARTITIONS=${KL_BENCH_PARTITIONS:-100}
BATCH=${KL_BENCH_BATCH:-100}
RUNS=${KL_BENCH_RUNS:-5}
SOURCE=bench_compact
TOPIC=bench.compact.$(date +%s)
psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }

psql_q <<-SQL
	CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
	DO \$\$ BEGIN
	  IF EXISTS (SELECT 1 FROM kafka_lake.sources WHERE source = '$SOURCE') THEN
	    PERFORM kafka_lake.drop_source('$SOURCE', drop_landing => true);
	  END IF;
	END \$\$;
	DROP SERVER IF EXISTS bench_compact_kafka CASCADE;
	CREATE SERVER bench_compact_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SQL
log "filling topic $TOPIC: $COUNT events over $PARTITIONS partitions"
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS" >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" \
	--partitions "$PARTITIONS" 2>/dev/null

log "landing in batches of $BATCH records"
t0=$(now)
psql_q <<-SQL
	SELECT FROM kafka_lake.create_source('$SOURCE', 'bench_compact_kafka', '$TOPIC') \\g /dev/null
	SELECT FROM kafka_lake.set_compression('$SOURCE', coalesce(nullif('${KL_BENCH_COMPRESSION:-}', ''),
	                                       (SELECT compression FROM kafka_lake.sources WHERE source = '$SOURCE'))) \\g /dev/null
	SET kafka_lake.batch_max_records = $BATCH;
	SELECT format('%s batches, %s records', count(*), sum(records))
	  FROM kafka_lake.land('$SOURCE', max_records => $COUNT * 2, timeout => '60 min')
	 WHERE status = 'landed' \gset
	\echo :format
SQL
t1=$(now)
log "landed in $(echo "$t1 - $t0" | bc) s"

psql_q <<-SQL
	DROP FOREIGN TABLE IF EXISTS bench_compact_events;
	CREATE FOREIGN TABLE bench_compact_events (units_produced int, business_date date)
	  SERVER bench_compact_kafka OPTIONS (source '$SOURCE', status 'accepted');
SQL

# time_scan label: RUNS timed runs of the query, after a warm-up; prints the median in ms
time_scan() {
	psql_q -At <<-SQL
		SET jit = off;
		SET max_parallel_workers_per_gather = 0;
		CREATE OR REPLACE FUNCTION pg_temp.time_ms(q text, OUT ms float8, OUT result text)
		LANGUAGE plpgsql AS \$\$
		DECLARE t0 timestamptz;
		BEGIN
		  t0 := clock_timestamp();
		  EXECUTE q INTO result;
		  ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
		END \$\$;
		CREATE TEMP TABLE runs (run int, ms float8, result text);
		SELECT FROM pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_compact_events');
		DO \$\$
		BEGIN
		  FOR i IN 1..$RUNS LOOP
		    INSERT INTO runs SELECT i, t.* FROM
		      pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_compact_events') t;
		  END LOOP;
		END \$\$;
		SELECT format('%s: %s', result, string_agg(to_char(ms, 'FM99990.0'), ' ' ORDER BY run)) FROM runs GROUP BY result;
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM runs;
	SQL
}

batches() {
	psql_q -At -c "SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id)
	               WHERE s.source = '$SOURCE'"
}
# the landing's bytes: its batches (the bridge's adapter/ CSVs aside)
landing_bytes() {
	du -sb --exclude=adapter "$(psql_q -At -c "SELECT current_setting('data_directory')")/kafka_lake/$SOURCE" | cut -f1
}

nb_before=$(batches)
log "scan over $nb_before batches: 1 warm-up + $RUNS runs"
out=$(time_scan)
before=$(echo "$out" | tail -1)
echo "$out" | head -n -1 | sed 's/^/   before: /'

log "compact()"
t0=$(now)
psql_q -At -c "SELECT format('%s batches made of %s', count(*), sum(batches)) FROM kafka_lake.compact('$SOURCE')"
t1=$(now)
compact_s=$(echo "$t1 - $t0" | bc)
nb_after=$(batches)
problems=$(psql_q -At -c "SELECT count(*) FROM kafka_lake.verify('$SOURCE')")
log "compacted in $compact_s s; verify(): $problems problems"

log "scan over $nb_after batches: 1 warm-up + $RUNS runs"
out=$(time_scan)
after=$(echo "$out" | tail -1)
echo "$out" | head -n -1 | sed 's/^/   after:  /'

# storage per record while the landing lives: by kind of file, and compressed
value_bytes=$(kcat -C -b "$KL_BOOTSTRAP" -t "$TOPIC" -e -q -o beginning -f '%S\n' | awk '{s += $1} END {print s}')
landing_dir=$(psql_q -At -c "SELECT current_setting('data_directory')")/kafka_lake/$SOURCE
# the files as they lie (compressed, the default) and what they hold uncompressed
kind_bytes() { find "$landing_dir" -type f -name "$1" -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
records_bytes=0
for f in accepted duplicates quarantine; do
	records_bytes=$(( records_bytes + $(kind_bytes "$f.jsonl") + $(kind_bytes "$f.jsonl.zst") ))
done
manifest_bytes=$(( $(kind_bytes manifest.json) + $(kind_bytes manifest.json.zst) ))
records_raw=$(psql_q -At -c "SELECT sum(r) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id),
	LATERAL unnest(coalesce(b.file_raw_bytes, b.file_bytes)) r WHERE s.source = '$SOURCE'")
manifest_raw=$(( $(kind_bytes manifest.json) + $(find "$landing_dir" -type f -name manifest.json.zst -print0 |
	xargs -0 -r zstdcat | wc -c) ))
compression=$(psql_q -At -c "SELECT compression FROM kafka_lake.sources WHERE source = '$SOURCE'")
table_bytes() {
	psql_q -At -c "SELECT pg_total_relation_size('kafka_lake.$1')"
}

# retention: expire everything, measure what stays
disk_before=$(landing_bytes)
catalog_sql="SELECT pg_total_relation_size('kafka_lake.batches') + pg_total_relation_size('kafka_lake.coordinates')
             + pg_total_relation_size('kafka_lake.accepted_events')"
psql_q -c "VACUUM (FULL) kafka_lake.batches, kafka_lake.coordinates, kafka_lake.accepted_events" 2>/dev/null
catalog_before=$(psql_q -At -c "$catalog_sql")
batches_before=$(table_bytes batches); coordinates_before=$(table_bytes coordinates); ids_before=$(table_bytes accepted_events)
# the date closed (for the dedupe horizon below), before its batches expire
psql_q -At -c "SELECT status FROM kafka_lake.close_date('$SOURCE', '2026-06-29', timeout => '10 min')" >/dev/null
psql_q -At -c "SELECT format('expired %s batches, %s bytes of record files', count(*), sum(bytes))
               FROM kafka_lake.expire('$SOURCE', before => current_date + 1)"
psql_q -c "VACUUM (FULL) kafka_lake.batches, kafka_lake.coordinates, kafka_lake.accepted_events" 2>/dev/null
disk_after=$(landing_bytes)
catalog_after=$(psql_q -At -c "$catalog_sql")
batches_after=$(table_bytes batches); coordinates_after=$(table_bytes coordinates); ids_after=$(table_bytes accepted_events)
per_m() { echo "$1 * 1000000 / $COUNT" | bc; }

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
printf '\nscan of %d events: %d batches of %d, then compacted (median of %d runs, same cluster, same run)\n' \
	"$COUNT" "$nb_before" "$BATCH" "$RUNS"
printf '  machine                             %s, %d cores\n' "${cpu:-unknown CPU}" "$(nproc)"
printf '  scan over %6d small batches      %8.1f ms\n' "$nb_before" "$before"
printf '  compact() into %6d batches       %8.1f s\n' "$nb_after" "$compact_s"
printf '  scan over %6d compacted batches  %8.1f ms\n' "$nb_after" "$after"
printf '  ratio before / after                %8.2f\n' "$(echo "$before / $after" | bc -l)"
printf '\nretention per 1,000,000 records (expire() of every batch)\n'
printf '  landing on disk before expiry       %12d bytes\n' "$(per_m "$disk_before")"
printf '  kept on disk (manifests, markers)   %12d bytes\n' "$(per_m "$disk_after")"
printf '  catalog (batches, coordinates, accepted_events, indexes) %d bytes before, %d bytes after\n' \
	"$(per_m "$catalog_before")" "$(per_m "$catalog_after")"
# with a dedupe horizon: the closed date's event_ids removed by expire()
psql_q -c "SELECT kafka_lake.set_dedupe_horizon('$SOURCE', '1 day')" >/dev/null
# (the same call reduces the manifests of the batches whose event_ids went)
read -r pruned reduced <<<"$(psql_q -At -F ' ' -c "SELECT coalesce(sum(records) FILTER (WHERE status = 'event_ids_pruned'), 0),
                        count(*) FILTER (WHERE status = 'reduced')
                        FROM kafka_lake.expire('$SOURCE', before => current_date + 1)")"
# VACUUM FULL keeps the rows an older snapshot may see (an autovacuum that the
# delete of a million rows starts takes one): again until nothing more goes
ids_horizon=$(table_bytes accepted_events)
for try in 1 2 3 4 5; do
	psql_q -c "VACUUM (FULL) kafka_lake.batches, kafka_lake.coordinates, kafka_lake.accepted_events" 2>/dev/null
	now_bytes=$(table_bytes accepted_events)
	[ "$now_bytes" -lt "$ids_horizon" ] || [ "$try" = 1 ] || break
	ids_horizon=$now_bytes
	sleep 2
done
catalog_horizon=$(psql_q -At -c "$catalog_sql")
ids_horizon=$(table_bytes accepted_events)
batches_horizon=$(table_bytes batches); coordinates_horizon=$(table_bytes coordinates)
disk_horizon=$(landing_bytes)
per_r() { echo "scale=1; $1 / $COUNT" | bc; }
ratio_v() { echo "scale=2; $1 / $value_bytes" | bc; }
printf '\nstorage per record (the compacted landing; Kafka delivered %s bytes a record)\n' "$(per_r "$value_bytes")"
printf '  on disk while live                  %8s bytes (%s x the values): record files %s, manifests %s, the rest %s\n' \
	"$(per_r "$disk_before")" "$(ratio_v "$disk_before")" "$(per_r "$records_bytes")" "$(per_r "$manifest_bytes")" \
	"$(per_r "$(( disk_before - records_bytes - manifest_bytes ))")"
printf '  (the source'"'"'s compression: %s) uncompressed, the record files hold %s bytes (%s x the values), the manifests %s\n' \
	"$compression" "$(per_r "$records_raw")" "$(ratio_v "$records_raw")" "$(per_r "$manifest_raw")"
printf '  catalog while live                  %8s bytes: batches %s, coordinates %s, accepted_events %s\n' \
	"$(per_r "$catalog_before")" "$(per_r "$batches_before")" "$(per_r "$coordinates_before")" "$(per_r "$ids_before")"
printf '  after expire(): disk %s, catalog %s bytes (batches %s, coordinates %s, accepted_events %s)\n' \
	"$(per_r "$disk_after")" "$(per_r "$catalog_after")" "$(per_r "$batches_after")" \
	"$(per_r "$coordinates_after")" "$(per_r "$ids_after")"
printf '  after close_date() and expire() with a dedupe horizon: disk %s, catalog %s bytes (batches %s, coordinates %s, accepted_events %s;\n' \
	"$(per_r "$disk_horizon")" "$(per_r "$catalog_horizon")" "$(per_r "$batches_horizon")" "$(per_r "$coordinates_horizon")" "$(per_r "$ids_horizon")"
printf '    %d event_ids removed, %d manifests reduced): %s bytes a record in all\n' \
	"$pruned" "$reduced" "$(per_r "$(( disk_horizon + catalog_horizon ))")"
exit 0
