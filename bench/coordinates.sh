#!/usr/bin/env bash
# bench/coordinates.sh -- listing a source's coordinates (the coordinate_list
# view) against reading its records (the foreign table), and against the
# element-by-element expansion the view made up to 1.7, in the same run.
#
#   bench/coordinates.sh     (env as bench/storage.sh; bench/run coordinates
#                             does all of it)
#
# Steps: fill a topic of KL_BENCH_PARTITIONS (4) partitions with
# KL_BENCH_COUNT (200,000) seed-style events, land them into a new source
# (one batch a partition: 50,000 records a batch), then time, KL_BENCH_RUNS
# (3) times each, median printed:
#
#   list       SELECT count(*), count(DISTINCT fingerprint) FROM coordinate_list
#   scan       SELECT count(*), count(DISTINCT event_id) FROM <source>_records
#              (every record read from its batch files: the baseline)
#   1.7 list   the same query over the view's definition up to 1.7, which took
#              each record's status, offset and fingerprint out of the batch's
#              values one at a time (KL_BENCH_OLD=0 skips it: it is quadratic
#              in the records of a batch, about half a minute here)
#
# Ratios: list / scan, and 1.7 list / list.
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/coordinates.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

COUNT=${KL_BENCH_COUNT:-200000}
PARTITIONS=${KL_BENCH_PARTITIONS:-4}
RUNS=${KL_BENCH_RUNS:-3}
SOURCE=bench_coords
TOPIC=bench.coords.$(date +%s)
psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }

psql_q <<-SQL
	CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
	DROP SERVER IF EXISTS bench_coords_kafka CASCADE;
	CREATE SERVER bench_coords_kafka FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SQL
log "filling topic $TOPIC: $COUNT events over $PARTITIONS partitions"
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS" >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" \
	--partitions "$PARTITIONS" 2>/dev/null
log "landing"
psql_q <<-SQL >/dev/null
	SELECT kafka_lake.drop_source('$SOURCE') FROM kafka_lake.sources WHERE source = '$SOURCE';
	SELECT kafka_lake.create_source('$SOURCE', 'bench_coords_kafka', '$TOPIC', group_id => 'bench.coords.$$');
	SELECT * FROM kafka_lake.land('$SOURCE', max_records => $COUNT);
	CREATE OR REPLACE VIEW public.bench_coordinate_list_1_7 AS
	SELECT s.source, c.topic, c.partition,
	       coalesce(c.offset_list[i], lower(c.offsets) + i - 1) AS "offset",
	       CASE substr(c.statuses, i, 1)
	            WHEN 'a' THEN 'accepted' WHEN 'P' THEN 'accepted' WHEN 'q' THEN 'quarantined'
	            WHEN 'X' THEN 'excluded' ELSE 'duplicate_event_id' END AS status,
	       encode(substring(c.fingerprints FROM (i - 1) * 32 + 1 FOR 32), 'hex') AS fingerprint,
	       c.batch_id
	FROM kafka_lake.coordinates c
	JOIN kafka_lake.sources s USING (source_id)
	CROSS JOIN LATERAL generate_series(1, length(c.statuses)) AS i
	WHERE substr(c.statuses, i, 1) <> 'R';
SQL
batches=$(psql_q -A -t -c "SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = '$SOURCE'")

# ms of one query, and its result checked against the expected one
timed() {
	local t0 t1 out
	t0=$(date +%s%N)
	out=$(psql_q -A -t -c "$1")
	t1=$(date +%s%N)
	[ "$out" = "$2" ] || { echo "bench/coordinates.sh: '$1' gave '$out', not '$2'" >&2; exit 1; }
	echo $(( (t1 - t0) / 1000000 ))
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

expect="$COUNT|$COUNT"
list=() scan=() old=()
for _ in $(seq "$RUNS"); do
	list+=("$(timed "SELECT count(*), count(DISTINCT fingerprint) FROM kafka_lake.coordinate_list WHERE source = '$SOURCE'" "$expect")")
	scan+=("$(timed "SELECT count(*), count(DISTINCT event_id) FROM kafka_lake.${SOURCE}_records" "$expect")")
	if [ "${KL_BENCH_OLD:-1}" != 0 ]; then
		old+=("$(timed "SELECT count(*), count(DISTINCT fingerprint) FROM public.bench_coordinate_list_1_7 WHERE source = '$SOURCE'" "$expect")")
	fi
done
l=$(median "${list[@]}") s=$(median "${scan[@]}")

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cpuid=$(awk -F': ' '$1 ~ /^cpu family/ {f=$2} $1 ~ /^model[[:space:]]*$/ {m=$2} END {if (f != "") printf "family %s model %s", f, m}' /proc/cpuinfo)
echo
echo "coordinate_list: $COUNT coordinates in $batches batches, medians of $RUNS runs"
printf '  machine            %s (%s), %d cores\n' "${cpu:-unknown CPU}" "$cpuid" "$(nproc)"
printf '  list               %8d ms   (runs: %s)\n' "$l" "${list[*]}"
printf '  scan (baseline)    %8d ms   (runs: %s)\n' "$s" "${scan[*]}"
printf '  list / scan        %8.2f\n' "$(echo "scale=4; $l / $s" | bc)"
if [ ${#old[@]} -gt 0 ]; then
	o=$(median "${old[@]}")
	printf '  1.7 list           %8d ms   (runs: %s)\n' "$o" "${old[*]}"
	printf '  1.7 list / list    %8.1f\n' "$(echo "scale=4; $o / ($l + 0.0001)" | bc)"
fi
psql_q -c "DROP VIEW public.bench_coordinate_list_1_7" -c "SELECT kafka_lake.drop_source('$SOURCE')" >/dev/null
