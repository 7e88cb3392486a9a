#!/usr/bin/env bash
# bench/shards.sh -- one topic landed by one server, and by two shards that
# each own half of its partitions (create_source(..., partitions => ...), one
# consumer group), in the same run.  The two shards are two databases of the
# bench cluster, each with its own landing directory, landing at the same
# time: on one machine they share its cores and its disk, so the total shows
# what two landings at once get from this machine, not what two machines give
# (each shard of its own would land its half at the single server's rate).
#
#   bench/shards.sh      (env: PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP
#                         KL_BROKER KL_BROKER_DIR, as set by test/lib/env.sh;
#                         bench/run does all of it)
#
# Fills a topic of KL_BENCH_SHARD_EVENTS events (default 1,000,000) over 100
# partitions, then KL_BENCH_RUNS times (default 3), interleaved: land() of the
# whole topic into a new source; land() of partitions 0-49 and 50-99 into new
# sources of two databases, started together.  Prints the machine, each run,
# the medians: each shard's events/s, the two shards' total (events / the
# later one's end) and the single server's, and total / single.  Each
# dropped source's catalog rows are vacuumed away before the next run.
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/shards.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

EVENTS=${KL_BENCH_SHARD_EVENTS:-1000000}
RUNS=${KL_BENCH_RUNS:-3}
OUT=$(mktemp -d /tmp/kl_bench_shards.XXXXXX)
chown postgres "$OUT" 2>/dev/null || true
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

topic=bench.shards.$(date +%s)
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 100
log "filling $topic with $EVENTS events over 100 partitions"
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count "$EVENTS" --partitions 100 2>/dev/null

for d in kl_bench_shard_a kl_bench_shard_b; do
	q -d postgres -c "DROP DATABASE IF EXISTS $d" -c "CREATE DATABASE $d" >/dev/null
	mkdir -p "$OUT/landing.$d" && chown postgres "$OUT/landing.$d"
	q -d postgres -c "ALTER DATABASE $d SET kafka_lake.landing_dir = '$OUT/landing.$d'" >/dev/null
done
for d in "$PGDATABASE" kl_bench_shard_a kl_bench_shard_b; do
	q -d "$d" -c "CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE" \
		-c "DROP SERVER IF EXISTS bench_shards CASCADE" \
		-c "CREATE SERVER bench_shards FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" >/dev/null
done

land() {	# land DATABASE SOURCE: the records landed, then the end time, on one line
	local n
	n=$(q -d "$1" -c "SELECT sum(records) FROM kafka_lake.land('$2', max_records => $EVENTS, timeout => '900 s')")
	echo "$n $(now)"
}

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
for run in $(seq "$RUNS"); do
	q -c "SELECT kafka_lake.create_source('bench_one_$run', 'bench_shards', '$topic')" >/dev/null
	q -c CHECKPOINT; sync
	t0=$(now); read -r n t1 < <(land "$PGDATABASE" "bench_one_$run")
	[ "$n" = "$EVENTS" ] || { echo "the single server landed $n records, expected $EVENTS" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$OUT/one"
	q -c "SELECT kafka_lake.drop_source('bench_one_$run', drop_landing => true)" \
		-c "VACUUM kafka_lake.accepted_events" -c "VACUUM kafka_lake.coordinates" >/dev/null

	q -d kl_bench_shard_a -c "SELECT kafka_lake.create_source('bench_a_$run', 'bench_shards', '$topic', group_id => 'bench.shards.$run',
	                          partitions => ARRAY(SELECT generate_series(0, 49)))" >/dev/null
	q -d kl_bench_shard_b -c "SELECT kafka_lake.create_source('bench_b_$run', 'bench_shards', '$topic', group_id => 'bench.shards.$run',
	                          partitions => ARRAY(SELECT generate_series(50, 99)))" >/dev/null
	q -c CHECKPOINT; sync
	t0=$(now)
	land kl_bench_shard_a "bench_a_$run" >"$OUT/a.$run" &
	land kl_bench_shard_b "bench_b_$run" >"$OUT/b.$run" &
	wait
	read -r na ta <"$OUT/a.$run"; read -r nb tb <"$OUT/b.$run"
	[ $((na + nb)) = "$EVENTS" ] || { echo "the shards landed $na + $nb records, expected $EVENTS" >&2; exit 1; }
	echo "$na / ($ta - $t0)" | bc -l >>"$OUT/rate_a"
	echo "$nb / ($tb - $t0)" | bc -l >>"$OUT/rate_b"
	last=$(printf '%s\n%s\n' "$ta" "$tb" | sort -g | tail -1)
	echo "$last - $t0" | bc -l >>"$OUT/two"
	for s in a b; do
		q -d kl_bench_shard_$s -c "SELECT kafka_lake.drop_source('bench_${s}_$run', drop_landing => true)" \
			-c "VACUUM kafka_lake.accepted_events" -c "VACUUM kafka_lake.coordinates" >/dev/null
	done
	log "run $run: one server $(tail -1 "$OUT/one") s; two shards $(tail -1 "$OUT/two") s (shard a $na events, b $nb)"
done

one=$(median <"$OUT/one"); two=$(median <"$OUT/two")
printf '\nbench/shards.sh on %s (%s cores): %d events over 100 partitions, medians of %d runs\n' "$cpu" "$(nproc)" "$EVENTS" "$RUNS"
printf '  one server:  %6.2f s, %8.0f events/s\n' "$one" "$(echo "$EVENTS / $one" | bc -l)"
printf '  two shards:  %6.2f s, %8.0f events/s in total (shard a %.0f events/s, shard b %.0f events/s, landing at once)\n' \
	"$two" "$(echo "$EVENTS / $two" | bc -l)" "$(median <"$OUT/rate_a")" "$(median <"$OUT/rate_b")"
printf '  total / one server: %.2f\n' "$(echo "$one / $two" | bc -l)"
for d in kl_bench_shard_a kl_bench_shard_b; do q -d postgres -c "DROP DATABASE $d" >/dev/null; done
rm -rf "$OUT"
