#!/usr/bin/env bash
# bench/land.sh -- land() throughput against kcat consuming the same topic to a
# file, measured in the same run on the same broker (issue 3), and the
# landing backend's peak memory.
#
#   bench/land.sh            (env: PGHOST PGPORT PGUSER PGDATABASE
#                             KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR, as set by
#                             test/lib/env.sh; bench/run does all of it)
#
# Fills a topic of 100 partitions with 1,000,000 seed-style events (the test
# broker keeps about 5 MiB per partition, see ../shared/NOTES.md), then, each
# KL_BENCH_RUNS times (default 3) and interleaved:
#   kcat, default settings:  kcat -C -e -o beginning -f '%s\n' > file
#   kcat, tuned queue:       the same with queued.min.messages=2000000,
#                            queued.max.messages.kbytes=1048576 (the best
#                            kcat NOTES measured)
#   kafka_lake:              a new source, SELECT ... FROM kafka_lake.land(...)
#                            of all 1,000,000 records in one call, in a
#                            fresh backend; then its VmHWM
# and prints the medians and the ratios kcat_time / land_time (> 1 means land
# is faster).  Every land writes, fsyncs and commits everything, and kcat
# only writes its file; that is the comparison the issue asks for.
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/land.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

COUNT=${KL_BENCH_COUNT:-1000000}
PARTITIONS=${KL_BENCH_PARTITIONS:-100}
RUNS=${KL_BENCH_RUNS:-3}
TOPIC=bench.land.$(date +%s)
OUT=${KL_BENCH_OUT:-$(mktemp -d /tmp/kl_bench_land.XXXXXX)}
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

psql -X -q -v ON_ERROR_STOP=1 <<-SQL
	CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
	DROP SERVER IF EXISTS bench_land CASCADE;
	CREATE SERVER bench_land FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SQL
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS"
log "filling $TOPIC with $COUNT events over $PARTITIONS partitions"
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" --partitions "$PARTITIONS" 2>/dev/null

: >"$OUT/kcat_default" ; : >"$OUT/kcat_tuned" ; : >"$OUT/land" ; : >"$OUT/hwm"
for run in $(seq "$RUNS"); do
	t0=$(now)
	kcat -C -b "$KL_BOOTSTRAP" -t "$TOPIC" -e -q -o beginning -f '%s\n' >"$OUT/kcat.out"
	t1=$(now)
	n=$(wc -l <"$OUT/kcat.out")
	[ "$n" = "$COUNT" ] || { echo "kcat read $n records, expected $COUNT" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$OUT/kcat_default"

	t0=$(now)
	kcat -C -b "$KL_BOOTSTRAP" -t "$TOPIC" -e -q -o beginning -f '%s\n' \
		-X queued.min.messages=2000000 -X queued.max.messages.kbytes=1048576 >"$OUT/kcat.out"
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$OUT/kcat_tuned"
	rm -f "$OUT/kcat.out"

	src=bench_land_$run
	psql -X -q -v ON_ERROR_STOP=1 -c "SELECT kafka_lake.create_source('$src', 'bench_land', '$TOPIC')" >/dev/null
	sync
	t0=$(now)
	landed=$(psql -X -A -t -q -v ON_ERROR_STOP=1 \
		-c "SELECT sum(records) FROM kafka_lake.land('$src', max_records => $COUNT, timeout => '600 s')" \
		-c "SELECT regexp_replace(pg_read_file('/proc/self/status'), '.*VmHWM:\s+(\d+) kB.*', '\1', 's')")
	t1=$(now)
	set -- $landed
	[ "$1" = "$COUNT" ] || { echo "land landed $1 records, expected $COUNT" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$OUT/land"
	echo "$2" >>"$OUT/hwm"
	log "run $run: kcat $(tail -1 "$OUT/kcat_default") s, kcat tuned $(tail -1 "$OUT/kcat_tuned") s, land $(tail -1 "$OUT/land") s, peak backend memory $(( $2 / 1024 )) MiB"
	# each run starts from an empty accepted_events, as the first landing of a source would
	psql -X -q -c "SELECT kafka_lake.drop_source('$src', drop_landing => true)" \
		-c "VACUUM kafka_lake.accepted_events" >/dev/null
done

kd=$(median <"$OUT/kcat_default"); kt=$(median <"$OUT/kcat_tuned"); ld=$(median <"$OUT/land")
hwm=$(sort -g "$OUT/hwm" | tail -1)
printf '\nland() of %d records over %d partitions (median of %d runs, same broker, same run)\n' "$COUNT" "$PARTITIONS" "$RUNS"
printf '  kcat to a file, default settings   %8.3f s\n' "$kd"
printf '  kcat to a file, tuned queue        %8.3f s\n' "$kt"
printf '  kafka_lake.land()                  %8.3f s   (%.0f records/s)\n' "$ld" "$(echo "$COUNT / $ld" | bc -l)"
printf '  ratio kcat default / land          %8.2f\n' "$(echo "$kd / $ld" | bc -l)"
printf '  ratio kcat tuned / land            %8.2f\n' "$(echo "$kt / $ld" | bc -l)"
printf '  peak backend memory (VmHWM)        %8d MiB  (kafka_lake.batch_max_bytes %s)\n' $(( hwm / 1024 )) \
	"$(psql -X -A -t -q -c "LOAD 'kafka_lake'" -c "SHOW kafka_lake.batch_max_bytes" 2>/dev/null)"
[ -z "${KL_BENCH_OUT:-}" ] && rm -rf "$OUT"
exit 0
