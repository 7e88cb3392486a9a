#!/usr/bin/env bash
# bench/partitions.sh -- land() of a small topic and of a topic of many
# partitions against kcat consuming it to a file with default settings, in
# the same run: where the landing's fixed costs per call and per partition
# (a batch's directory, fsyncs and catalog rows; the group commit; the
# partition's watermarks) weigh more than its records.
#
#   bench/partitions.sh      (env: PGHOST PGPORT PGUSER PGDATABASE
#                             KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR, as set by
#                             test/lib/env.sh; bench/run does all of it)
#
# For each shape of KL_BENCH_SHAPES (default "200000x64 200000x1000": events
# x partitions), fills a topic with seed-style events, then KL_BENCH_RUNS times
# (default 3), interleaved: kcat -C -e -o beginning -f '%s\n' > file, and land()
# of every record into a new source in a fresh backend (dropped after).
# Prints the machine, each run's times, the best of each and the ratio kcat /
# land (> 1: the landing is faster than kcat to a file).
#
# The sources are dropped (with their files) after the last run, not between
# runs: on an ext4 without a journal (this kind of test machine's) the
# allocation of a new inode skips every inode deleted in the last few
# minutes, one inode-table read each, so a landing of 1,000 partitions just
# after the drop of the previous run's 5,000 files paid for that drop, and
# each run came out slower than the one before (6.5, 6.9, 7.5 s; 5.8 to
# 10.7 s over eight runs).  The same holds for whatever else deleted many
# files shortly before the bench (the test suite's clusters, another bench):
# ext4 counts an inode as recently deleted for one minute, six while its
# inode-table block is not yet written back.  KL_BENCH_QUIET=seconds waits
# that long after the topics are filled and before the first run (370 is
# enough; the same landing of 1,000 partitions took 3.0 s after such a wait
# and 5 to 7 s within minutes of the test suite).
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/partitions.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

SHAPES=${KL_BENCH_SHAPES:-200000x64 200000x1000}
RUNS=${KL_BENCH_RUNS:-3}
OUT=$(mktemp -d /tmp/kl_bench_partitions.XXXXXX)
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }
best() { sort -g | head -1; }
runs() { awk '{printf "%s%.2f", (NR > 1 ? ", " : ""), $1}'; }

psql -X -q -v ON_ERROR_STOP=1 <<-SQL
	CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
	DROP SERVER IF EXISTS bench_partitions CASCADE;
	CREATE SERVER bench_partitions FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SQL

QUIET=${KL_BENCH_QUIET:-0}
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
report=""
dropped=()
shape_no=0
for shape in $SHAPES; do
	shape_no=$((shape_no + 1))
	count=${shape%x*}
	partitions=${shape#*x}
	topic=bench.partitions.$(date +%s).$shape_no
	"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" "$partitions"
	log "filling $topic with $count events over $partitions partitions"
	"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count "$count" --partitions "$partitions" 2>/dev/null
	: >"$OUT/kcat.$shape_no"; : >"$OUT/land.$shape_no"
	if [ "$shape_no" = 1 ] && [ "$QUIET" -gt 0 ]; then
		log "waiting $QUIET s for the file system to forget what was deleted before"
		sleep "$QUIET"
	fi
	for run in $(seq "$RUNS"); do
		t0=$(now)
		kcat -C -b "$KL_BOOTSTRAP" -t "$topic" -e -q -o beginning -f '%s\n' >"$OUT/kcat.out"
		t1=$(now)
		n=$(wc -l <"$OUT/kcat.out")
		[ "$n" = "$count" ] || { echo "kcat read $n records, expected $count" >&2; exit 1; }
		echo "$t1 - $t0" | bc >>"$OUT/kcat.$shape_no"
		rm -f "$OUT/kcat.out"

		src=bench_partitions_${shape_no}_$run
		psql -X -q -v ON_ERROR_STOP=1 -c "SELECT kafka_lake.create_source('$src', 'bench_partitions', '$topic')" >/dev/null
		psql -X -q -c CHECKPOINT
		sync
		t0=$(now)
		landed=$(psql -X -A -t -q -v ON_ERROR_STOP=1 \
			-c "SELECT sum(records) FROM kafka_lake.land('$src', max_records => $count, timeout => '600 s')")
		t1=$(now)
		[ "$landed" = "$count" ] || { echo "land landed $landed records, expected $count" >&2; exit 1; }
		echo "$t1 - $t0" | bc >>"$OUT/land.$shape_no"
		dropped+=("$src")
		log "$shape run $run: kcat $(tail -1 "$OUT/kcat.$shape_no") s, land $(tail -1 "$OUT/land.$shape_no") s"
	done
	k=$(best <"$OUT/kcat.$shape_no"); l=$(best <"$OUT/land.$shape_no")
	report+=$(printf '\n  %7d events over %4d partitions: land best %6.2f s (runs %s), kcat best %6.2f s (runs %s): kcat / land %5.2f' \
		"$count" "$partitions" "$l" "$(runs <"$OUT/land.$shape_no")" "$k" "$(runs <"$OUT/kcat.$shape_no")" \
		"$(echo "$k / $l" | bc -l)")
done
for src in "${dropped[@]}"; do
	psql -X -q -c "SELECT kafka_lake.drop_source('$src', drop_landing => true)" >/dev/null
done
printf '\nland() against kcat to a file (default settings), best of %d runs each, same run\n' "$RUNS"
printf '  machine  %s, %d cores; waited %d s before the first run%s\n' "${cpu:-unknown CPU}" "$(nproc)" "$QUIET" "$report"
rm -rf "$OUT"
