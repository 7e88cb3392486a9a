#!/usr/bin/env bash
# bench/scan.sh -- full scan of 1,000,000 accepted events through a typed
# kafka_lake foreign table, against file_fdw over the same records as CSV,
# measured in the same run on the same cluster.
#
#   bench/scan.sh            (env: PGHOST PGPORT PGUSER PGDATABASE
#                             KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR, as set by
#                             test/lib/env.sh after kl_start_cluster and
#                             kl_start_broker; PGUSER must be a superuser)
#
# Steps: create a topic of 100 partitions (the test broker keeps only about
# 5 MiB per partition, see test/broker/README.md) and fill it with 1,000,000
# seed-style events; create a source and land it all (one batch per
# partition, compressed: a new source's default), and a second source of the
# same topic with set_compression('none') (plain JSONL); declare a typed
# foreign table over the accepted records of each;
# export the same records (the 13 event fields and the 5 Kafka fields of an
# accepted.jsonl line) as CSV with a header and declare a file_fdw table
# over it; then time
#
#   SELECT count(*), sum(units_produced) FROM <table>
#
# on both (and on the typed table kafka_lake.<source>_events that
# create_source made, whose units_produced is a bigint), warm cache,
# KL_BENCH_RUNS times each (default 5, interleaved,
# after one untimed warm-up run each), with JIT and parallelism off so both
# run the same plan shape.  Prints every run, the best and the median of
# each, the ratio file_fdw_time / kafka_lake_time (of the medians; > 1
# means kafka_lake is faster), and plain_time / kafka_lake_time (what the
# default compression costs the scan: < 1 means the plain JSONL reads faster).
#
# Settings: KL_BENCH_COUNT (default 1000000), KL_BENCH_PARTITIONS (100),
# KL_BENCH_RUNS (5), KL_BENCH_REUSE=1 keeps and reuses a source landed by
# an earlier run on the same cluster (for profiling).
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/scan.sh: $v is not set (source test/lib/env.sh and start a cluster and the broker)" >&2
		exit 2
	fi
done

COUNT=${KL_BENCH_COUNT:-1000000}
PARTITIONS=${KL_BENCH_PARTITIONS:-100}
RUNS=${KL_BENCH_RUNS:-5}
SOURCE=bench_scan
TOPIC=bench.scan.$(date +%s)

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }

exists=$(psql_q -Atc "SELECT count(*) FROM pg_extension e, kafka_lake.sources s
	WHERE e.extname = 'kafka_lake' AND s.source = '$SOURCE'" 2>/dev/null || echo 0)
if [ -z "${KL_BENCH_REUSE:-}" ] || [ "$exists" != 1 ]; then
	psql_q <<-SQL
		CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
		DO \$\$ BEGIN
		  IF EXISTS (SELECT 1 FROM kafka_lake.sources WHERE source = '$SOURCE') THEN
		    PERFORM kafka_lake.drop_source('$SOURCE', drop_landing => true);
		  END IF;
		  IF EXISTS (SELECT 1 FROM kafka_lake.sources WHERE source = '${SOURCE}_plain') THEN
		    PERFORM kafka_lake.drop_source('${SOURCE}_plain', drop_landing => true);
		  END IF;
		END \$\$;
		DROP SERVER IF EXISTS bench_kafka CASCADE;
		CREATE SERVER bench_kafka FOREIGN DATA WRAPPER kafka_lake
		  OPTIONS (brokers '$KL_BOOTSTRAP');
	SQL

	log "filling topic $TOPIC: $COUNT events over $PARTITIONS partitions"
	"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS" >/dev/null
	"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" \
		--partitions "$PARTITIONS"

	log "landing"
	start=$(date +%s.%N)
	psql_q <<-SQL
		SELECT FROM kafka_lake.create_source('$SOURCE', 'bench_kafka', '$TOPIC') \\g /dev/null
		SET kafka_lake.batch_max_records = 1000000;
		SET kafka_lake.batch_max_bytes = '256MB';
		CREATE TEMP TABLE landed AS
		  SELECT * FROM kafka_lake.land('$SOURCE', max_records => $COUNT * 2, timeout => '30 min');
		SELECT format('%s batches, %s records, %s accepted', count(*), sum(records), sum(accepted))
		  FROM landed WHERE status = 'landed' \gset
		\echo :format
		-- the same records as plain JSONL, for the cost of the default compression
		SELECT FROM kafka_lake.create_source('${SOURCE}_plain', 'bench_kafka', '$TOPIC',
		                                     group_id => 'bench-scan-plain-$TOPIC') \g /dev/null
		SELECT FROM kafka_lake.set_compression('${SOURCE}_plain', 'none') \g /dev/null
		SELECT FROM kafka_lake.land('${SOURCE}_plain', max_records => $COUNT * 2, timeout => '30 min') \g /dev/null
	SQL
	end=$(date +%s.%N)
	log "landed in $(echo "$end - $start" | bc) s"
fi

landed=$(psql_q -Atc "SELECT coalesce(sum(accepted_count), 0) FROM kafka_lake.batches b
	JOIN kafka_lake.sources s USING (source_id) WHERE s.source = '$SOURCE'")
if [ "$landed" != "$COUNT" ]; then
	echo "bench/scan.sh: expected $COUNT accepted events landed, the catalog has $landed" >&2
	exit 1
fi

# the 13 event fields and the 5 Kafka fields of an accepted line
COLUMNS='event_id text, schema_version int, event_time timestamptz, business_date date,
	plant_id text, line_id text, work_order_id text, machine_id text,
	product_code text, operation text, units_produced int, defect_count int,
	cycle_time_ms int, topic text, partition int, "offset" bigint, key text,
	timestamp_ms bigint'
log "typed foreign table, CSV export, file_fdw table"
psql_q <<-SQL
	DROP FOREIGN TABLE IF EXISTS bench_events_kl, bench_events_csv;
	CREATE FOREIGN TABLE bench_events_kl ($COLUMNS)
	  SERVER bench_kafka OPTIONS (source '$SOURCE', status 'accepted');
	DROP FOREIGN TABLE IF EXISTS bench_events_plain;
	CREATE FOREIGN TABLE bench_events_plain ($COLUMNS)
	  SERVER bench_kafka OPTIONS (source '${SOURCE}_plain', status 'accepted');

	SELECT current_setting('data_directory') || '/bench_scan_events.csv' AS csv_path \gset
	COPY (SELECT * FROM bench_events_kl) TO :'csv_path' WITH (FORMAT csv, HEADER true);

	CREATE EXTENSION IF NOT EXISTS file_fdw;
	DROP SERVER IF EXISTS bench_files CASCADE;
	CREATE SERVER bench_files FOREIGN DATA WRAPPER file_fdw;
	CREATE FOREIGN TABLE bench_events_csv ($COLUMNS)
	  SERVER bench_files OPTIONS (filename :'csv_path', format 'csv', header 'true');

SQL

csv_bytes=$(psql_q -Atc "SELECT (pg_stat_file(current_setting('data_directory') || '/bench_scan_events.csv')).size")
jsonl_bytes=$(psql_q -Atc "SELECT sum(file_bytes[1]) FROM kafka_lake.batches b
	JOIN kafka_lake.sources s USING (source_id) WHERE s.source = '$SOURCE'")
log "accepted.jsonl: $jsonl_bytes bytes in $(psql_q -Atc "SELECT count(*) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = '$SOURCE'") files; CSV: $csv_bytes bytes"

log "timing SELECT count(*), sum(units_produced): 1 warm-up + $RUNS runs each"
psql_q -At <<-SQL
	SET jit = off;
	CREATE OR REPLACE FUNCTION pg_temp.time_ms(q text, OUT ms float8, OUT result text)
	LANGUAGE plpgsql AS \$\$
	DECLARE t0 timestamptz;
	BEGIN
	  t0 := clock_timestamp();
	  EXECUTE q INTO result;
	  ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
	END \$\$;
	SET max_parallel_workers_per_gather = 0;
	CREATE TEMP TABLE runs (engine text, run int, ms float8, result text);
	SELECT FROM pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_events_kl');
	SELECT FROM pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_events_csv');
	SELECT FROM pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_events_plain');
	SELECT FROM pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM kafka_lake.${SOURCE}_events');
	DO \$\$
	BEGIN
	  FOR i IN 1..$RUNS LOOP
	    INSERT INTO runs SELECT 'kafka_lake', i, t.* FROM
	      pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_events_kl') t;
	    INSERT INTO runs SELECT 'events_tbl', i, t.* FROM
	      pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM kafka_lake.${SOURCE}_events') t;
	    INSERT INTO runs SELECT 'file_fdw', i, t.* FROM
	      pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_events_csv') t;
	    INSERT INTO runs SELECT 'kl_plain', i, t.* FROM
	      pg_temp.time_ms('SELECT (count(*), sum(units_produced))::text FROM bench_events_plain') t;
	  END LOOP;
	END \$\$;
	SELECT format('%-10s run %s: %s ms  %s', engine, run, to_char(ms, 'FM99990.0'), result) FROM runs ORDER BY engine DESC, run;
	SELECT CASE WHEN count(DISTINCT result) = 1 THEN 'both return ' || min(result)
	            ELSE 'RESULTS DIFFER: ' || string_agg(DISTINCT result, ' vs ') END FROM runs;
	WITH s AS (
	  SELECT engine, min(ms) AS best,
	         percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS median
	  FROM runs GROUP BY engine)
	SELECT format('%-10s best %s ms, median %s ms (%s rows/s)', engine,
	              to_char(best, 'FM99990.0'), to_char(median, 'FM99990.0'),
	              to_char($COUNT / (median / 1000), 'FM9,999,999,999'))
	  FROM s ORDER BY engine DESC;
	WITH s AS (
	  SELECT engine, min(ms) AS best,
	         percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS median
	  FROM runs GROUP BY engine),
	r(n, label, num, den) AS (VALUES
	  (1, 'file_fdw_time / kafka_lake_time', 'file_fdw', 'kafka_lake'),
	  (2, 'plain JSONL time / zstd time (the same typed table over the same records, set_compression(''none''))',
	   'kl_plain', 'kafka_lake'),
	  (3, 'file_fdw_time / time of kafka_lake.${SOURCE}_events (the typed table create_source made, units_produced bigint)',
	   'file_fdw', 'events_tbl'))
	SELECT format('ratio %s: %s (median), %s (best)', r.label,
	              round((f.median / k.median)::numeric, 2), round((f.best / k.best)::numeric, 2))
	  FROM r JOIN s f ON f.engine = r.num JOIN s k ON k.engine = r.den ORDER BY r.n;
SQL
