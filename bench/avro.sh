#!/usr/bin/env bash
# bench/avro.sh -- kafka_lake.avro_decode() throughput on the bench's machine
# event (bench/land.sh's fields, as an Avro record: event_time a
# timestamp-millis, business_date a date, the counts ints, the rest strings;
# test/avro/generate.js's "machine event" case), against PostgreSQL reading
# the same events as JSON text, measured in the same run.
#
#   bench/avro.sh            (env: PGHOST PGPORT PGUSER PGDATABASE, as set by
#                             test/lib/env.sh; bench/run avro does all of it)
#
# Makes KL_BENCH_COUNT (default 1,000,000) datums with distinct event_ids,
# then, each KL_BENCH_RUNS times (default 3), times in one backend:
#   baseline: SELECT sum(length(v)) FROM the datums (the scan alone)
#   avro:     SELECT sum(length(kafka_lake.avro_decode(v, '<schema>')::text))
#   json:     SELECT sum(length(j::json::text)) FROM the decoded events as
#             text (what reading the same event as JSON costs PostgreSQL)
# and prints the medians, avro_decode's records/s with the scan's time taken
# off, and the ratio json_time / avro_time (> 1: decoding Avro is cheaper
# than PostgreSQL's JSON input of the same event).
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE; do
	if [ -z "${!v:-}" ]; then
		echo "bench/avro.sh: $v is not set (run bench/run avro)" >&2
		exit 2
	fi
done
COUNT=${KL_BENCH_COUNT:-1000000}
RUNS=${KL_BENCH_RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

q -c "CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE" >/dev/null 2>&1
case_line=$(grep '"name":"machine event"' "$root/test/fixtures/avro/cases.jsonl")
q >/dev/null <<SQL
DROP TABLE IF EXISTS avro_bench, avro_bench_json, avro_bench_schema;
CREATE TABLE avro_bench_schema AS
  SELECT (c->>'writer')::json AS schema, decode(c->>'hex', 'hex') AS base
    FROM (SELECT '$(printf '%s' "$case_line" | sed "s/'/''/g")'::json AS c) s;
-- event_id "evt-NNNNNN": bytes 6 to 11 of the datum are its digits
CREATE TABLE avro_bench AS
  SELECT overlay(base PLACING convert_to(lpad((i % 1000000)::text, 6, '0'), 'UTF8') FROM 6 FOR 6) AS v
    FROM avro_bench_schema, generate_series(1, $COUNT) i;
CREATE TABLE avro_bench_json AS
  SELECT kafka_lake.avro_decode(v, schema)::text AS j FROM avro_bench, avro_bench_schema;
VACUUM ANALYZE avro_bench;
VACUUM ANALYZE avro_bench_json;
SQL
echo "sample: $(q -c "SELECT j FROM avro_bench_json LIMIT 1")"
# the schema as a constant, as a query (or a prepared statement) passes it
schema=$(q -c "SELECT schema FROM avro_bench_schema")
schema=${schema//\'/\'\'}

time_of() {
	q -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
base=() avro=() json=()
for _ in $(seq "$RUNS"); do
	base+=("$(time_of "SELECT sum(length(v)) FROM avro_bench")")
	avro+=("$(time_of "SELECT sum(length(kafka_lake.avro_decode(v, '$schema'::json)::text)) FROM avro_bench")")
	json+=("$(time_of "SELECT sum(length(j::json::text)) FROM avro_bench_json")")
done
b=$(printf '%s\n' "${base[@]}" | median)
a=$(printf '%s\n' "${avro[@]}" | median)
j=$(printf '%s\n' "${json[@]}" | median)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "records: $COUNT, runs: $RUNS (medians)"
echo "scan alone:          $b ms"
echo "avro_decode:         $a ms  ($(echo "$COUNT * 1000 / $a" | bc) records/s; $(echo "$COUNT * 1000 / ($a - $b)" | bc) records/s without the scan)"
echo "json input of same:  $j ms"
echo "ratio json/avro:     $(echo "scale=2; $j / $a" | bc)"
q -c "DROP TABLE avro_bench, avro_bench_json, avro_bench_schema" >/dev/null
