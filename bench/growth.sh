#!/usr/bin/env bash
# bench/growth.sh -- does a source that grows stay fast?  Six landings
# (KL_BENCH_ROUNDS) of KL_BENCH_COUNT (default 500,000) new seed-style events
# each, over KL_BENCH_PARTITIONS (100), into one source: each land()'s time,
# the last against the first, the WAL each wrote (after a CHECKPOINT, as the
# first landing after each checkpoint does: a page's first change writes it
# whole), the pages of its primary key each read into shared_buffers, and
# the size of kafka_lake.accepted_events after each (the identities the
# landing checks every new event against).
# KL_BENCH_CHECKPOINT=0 lands without the CHECKPOINT before each round.
#
#   bench/growth.sh          (env: PGHOST PGPORT PGUSER PGDATABASE
#                             KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR, as set by
#                             test/lib/env.sh; bench/run does all of it)
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/growth.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

COUNT=${KL_BENCH_COUNT:-500000}
PARTITIONS=${KL_BENCH_PARTITIONS:-100}
ROUNDS=${KL_BENCH_ROUNDS:-6}
TOPIC=bench.growth.$(date +%s)
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }
# pages of accepted_events' primary key read from outside shared_buffers so far
index_reads() {
	psql -X -A -t -q -c "SELECT coalesce(sum(idx_blks_read), 0) FROM pg_statio_all_indexes
	                      WHERE schemaname = 'kafka_lake' AND indexrelname = 'accepted_events_pkey'"
}
now() { date +%s.%N; }

psql -X -q -v ON_ERROR_STOP=1 <<-SQL
	CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
	DROP SERVER IF EXISTS bench_growth CASCADE;
	CREATE SERVER bench_growth FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
	SELECT kafka_lake.create_source('bench_growth', 'bench_growth', '$TOPIC');
SQL
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
report=""
first=""
for round in $(seq "$ROUNDS"); do
	log "round $round: filling $COUNT events"
	"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" --partitions "$PARTITIONS" \
		--start $(( (round - 1) * COUNT + 1 )) 2>/dev/null
	[ "${KL_BENCH_CHECKPOINT:-1}" = 0 ] || psql -X -q -c CHECKPOINT
	sync
	lsn0=$(psql -X -A -t -q -c "SELECT pg_current_wal_lsn()")
	read0=$(index_reads)
	t0=$(now)
	landed=$(psql -X -A -t -q -v ON_ERROR_STOP=1 \
		-c "SELECT sum(records) FROM kafka_lake.land('bench_growth', max_records => $COUNT, timeout => '600 s')")
	t1=$(now)
	[ "$landed" = "$COUNT" ] || { echo "round $round landed $landed records, expected $COUNT" >&2; exit 1; }
	t=$(echo "$t1 - $t0" | bc)
	[ -n "$first" ] || first=$t
	ids=$(psql -X -A -t -q -c "SELECT pg_size_pretty(pg_total_relation_size('kafka_lake.accepted_events'))")
	wal=$(psql -X -A -t -q -c "SELECT pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0'))")
	sleep 1	# the landing's backend reports its statistics as it exits
	reads=$(( $(index_reads) - read0 ))
	report+=$(printf '\n  round %d: %7.2f s  (%5.2f x the first; WAL %s; %d index pages read into shared_buffers; the source then holds %d events, accepted_events %s)' \
		"$round" "$t" "$(echo "$t / $first" | bc -l)" "$wal" "$reads" $(( round * COUNT )) "$ids")
done
printf '\nland() of %d new events, %d times, into one source over %d partitions\n' "$COUNT" "$ROUNDS" "$PARTITIONS"
printf '  machine  %s, %d cores; shared_buffers %s%s\n' "${cpu:-unknown CPU}" "$(nproc)" \
	"$(psql -X -A -t -q -c 'SHOW shared_buffers')" "$report"
