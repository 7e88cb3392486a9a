#!/usr/bin/env bash
#
# bench/export.sh -- export() of a date against DuckDB writing the same rows
#
# Exporting a business date of 1,000,000 silver rows as Parquet should take
# at most 1.5 times as long as DuckDB writing the same rows from the date's
# canonical CSV, `COPY (SELECT * FROM read_csv(...)) TO ... (FORMAT parquet,
# COMPRESSION zstd)`, and give files of about its size.  This script measures
# both in one run:
#
#   1. creates a topic of PARTITIONS partitions, fills it with COUNT
#      seed-style events of ONE business date, lands and bridges them
#      (timed, for information);
#   2. runs kafka_lake.export(source, date) RUNS times (timed; the date's
#      JSON is removed before each run, so that each writes every file), and
#      checks the silver file's row count with DuckDB;
#   3. runs DuckDB's COPY of the bridge's canonical CSV (the same rows and
#      columns as silver, as text) to one Parquet file, RUNS times
#      (test/parquet/duck_write.js: the statement alone is timed);
#   4. prints the medians, export / DuckDB, and both files' sizes.
#
# Environment (a cluster with kafka_lake installed and a running broker):
#   PGHOST PGPORT PGUSER PGDATABASE   where to connect (a superuser)
#   KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR
# Optional:
#   COUNT (1000000)  PARTITIONS (100)  DATE (2026-06-29)  KL_BENCH_RUNS (3)
#
# Runs on the database server as root or the postgres OS user (it reads the
# landing and the export directory); needs test/parquet's npm packages
# (bench/run installs them).
#
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/export.sh: environment variable $v is not set" >&2
		exit 64
	fi
done

COUNT=${COUNT:-1000000}
PARTITIONS=${PARTITIONS:-100}
DATE=${DATE:-2026-06-29}
RUNS=${KL_BENCH_RUNS:-3}
RUN=$(date +%Y%m%d%H%M%S)_$$
TOPIC="bench.export.$RUN"
SOURCE="bench_export_$RUN"
SERVER="bench_export_kafka"
here=$(cd "$(dirname "$0")" && pwd)
pq=$here/../test/parquet
work=$(mktemp -d /tmp/kl_bench_export.XXXXXX)
chown postgres "$work"
trap 'rm -rf "$work"' EXIT

psql_q() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== bench/export.sh: $COUNT events of $DATE over $PARTITIONS partitions, $RUNS runs"
echo "machine:  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS" >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" \
	--date "$DATE" --timestamp event >/dev/null
psql_q <<SQL
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = '$SERVER') THEN
        EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L)',
                       '$SERVER', '$KL_BOOTSTRAP');
    END IF;
END
\$\$;
SELECT kafka_lake.create_source('$SOURCE', '$SERVER', '$TOPIC');
SQL
t0=$(now)
psql_q -c "SELECT sum(accepted) FROM kafka_lake.land('$SOURCE', max_records => $COUNT + 1000, timeout => '600 s')" >/dev/null
t1=$(now)
echo "land:     $(elapsed "$t0" "$t1") s"
t0=$(now)
source_hash=$(psql_q -c "SELECT source_hash FROM kafka_lake.bridge('$SOURCE', '$DATE')")
t1=$(now)
echo "bridge:   $(elapsed "$t0" "$t1") s"
psql_q -c "CHECKPOINT" >/dev/null

export PGOPTIONS="-c kafka_lake.export_dir=$work"
exports=""
for i in $(seq "$RUNS"); do
	rm -f "$work/$SOURCE/_snapshots/business_date=$DATE.json"
	t0=$(now)
	psql_q -c "SELECT count(*) FROM kafka_lake.export('$SOURCE', '$DATE')" >/dev/null
	t1=$(now)
	exports="$exports $(elapsed "$t0" "$t1")"
done
silver=$work/$SOURCE/silver_machine_events/business_date=$DATE/part-00000.parquet
rows=$(cd "$pq" && node read.js sql "SELECT count(*) FROM read_parquet('$silver')" | tr -dc '0-9')
if [ "$rows" != "$COUNT" ]; then
	echo "bench/export.sh: DuckDB reads $rows rows in $silver, expected $COUNT" >&2
	exit 1
fi
export_bytes=$(stat -c %s "$silver")

csv=$(psql_q -c "LOAD 'kafka_lake'" -c "SELECT (CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%'
                                THEN current_setting('kafka_lake.landing_dir')
                                ELSE current_setting('data_directory') || '/' || current_setting('kafka_lake.landing_dir') END)
                        || '/' || a.path
                 FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
                 WHERE s.source = '$SOURCE' AND a.source_hash = '$source_hash'")
ducks=""
for i in $(seq "$RUNS"); do
	rm -f "$work/duck.parquet"
	ms=$(cd "$pq" && node duck_write.js "$csv" "$work/duck.parquet")
	ducks="$ducks $(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
done
duck_bytes=$(stat -c %s "$work/duck.parquet")

e=$(echo "$exports" | median)
d=$(echo "$ducks" | median)
echo "export:   $e s median of$exports (silver $export_bytes bytes, plus gold)"
echo "duckdb:   $d s median of$ducks ($duck_bytes bytes, from $(stat -c %s "$csv") bytes of CSV)"
echo "ratio:    export / DuckDB = $(awk -v e="$e" -v d="$d" 'BEGIN { printf "%.2f", e / d }') (goal <= 1.5);" \
	"file size export / DuckDB = $(awk -v e="$export_bytes" -v d="$duck_bytes" 'BEGIN { printf "%.2f", e / d }')"
psql_q -c "SELECT kafka_lake.drop_source('$SOURCE', drop_landing => true)" >/dev/null
