#!/usr/bin/env bash
#
# bench/bridge.sh -- the date bridge against `sort` + `sha256sum`
#
# Bridging one business date of 1,000,000 accepted events should take at
# most 2 times as long as `sort` plus `sha256sum` over the same canonical
# CSV, for the seed's built-in pipeline (machine_event_v1 and
# gold_daily_line_metrics) and for the same pipeline defined by a user (a
# copy of machine_event_v1 made with create_contract, and a gold declared
# with define_gold like the built-in one).  This script measures them in one
# run:
#
#   1. creates a topic of PARTITIONS partitions (default 100: the test
#      broker keeps only about 5 MiB per partition, see test/broker/README.md) and fills
#      it with COUNT seed-style events of ONE business date
#      (kafka_lake_broker fill --date);
#   2. lands them (timed, for information);
#   3. runs kafka_lake.bridge(source, date) (timed);
#   4. runs `sort` and then `sha256sum` over the adapter's events.csv that
#      the bridge wrote (timed), and checks that sha256sum prints the
#      bridge's source_hash.  `sort` runs twice: in the caller's locale (as
#      typed in a shell) and with LC_ALL=C (faster, so a stricter baseline);
#   5. lands the same events again into a second source whose contract is
#      a user-written copy of machine_event_v1, with a gold defined by
#      define_gold as the built-in one is, bridges it (timed), checks that
#      its source_hash and its gold equal the built-in's;
#   6. lands them into a third source whose contract declares the events
#      versions of entities (machine_event_v1's definition with "entity":
#      {"key": ["work_order_id", "machine_id"], "order_by": ["event_time"]}
#      in place of its natural key: silver keeps each pair's latest event),
#      with the same declared gold, bridges it (timed), and checks that its
#      source_hash is the built-in's (the same CSV) and that silver has one
#      row per pair;
#   7. prints bridge_time / (sort_time + sha256sum_time) for the three
#      bridges, with both sorts.
#
# Environment (a cluster with kafka_lake installed and a running broker):
#   PGHOST PGPORT PGUSER PGDATABASE   where to connect (a superuser)
#   KL_BOOTSTRAP                      the broker's bootstrap address
#   KL_BROKER                         path of test/broker/kafka_lake_broker
#   KL_BROKER_DIR                     the broker's --dir (for ctl)
# Optional:
#   COUNT (1000000)  PARTITIONS (100)  DATE (2026-06-29)
#   KEEP=1           keep the source, its files and catalog rows afterwards
#
# The CSV is read directly from the landing directory, so run this on the
# database server as a user that can read it (the postgres OS user, or
# root).
#
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR; do
	if [ -z "${!v:-}" ]; then
		echo "bench/bridge.sh: environment variable $v is not set" >&2
		exit 64
	fi
done

COUNT=${COUNT:-1000000}
PARTITIONS=${PARTITIONS:-100}
DATE=${DATE:-2026-06-29}
RUN=$(date +%Y%m%d%H%M%S)_$$
TOPIC="bench.bridge.$RUN"
SOURCE="bench_bridge_$RUN"
USER_SOURCE="bench_bridge_user_$RUN"
USER_GOLD="bench_gold_$RUN"
ENTITY_SOURCE="bench_bridge_entity_$RUN"
ENTITY_GOLD="bench_gold_entity_$RUN"
SERVER="bench_bridge_kafka"

psql_q() {
	psql -X -q -v ON_ERROR_STOP=1 -At "$@"
}

now() {
	date +%s.%N
}

elapsed() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'
}

echo "== bench/bridge.sh: $COUNT events of $DATE over $PARTITIONS partitions"

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS" >/dev/null
t0=$(now)
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" \
	--date "$DATE" --timestamp event
t1=$(now)
echo "fill:     $(elapsed "$t0" "$t1") s"

psql_q <<SQL
CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = '$SERVER') THEN
        EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers %L)',
                       '$SERVER', '$KL_BOOTSTRAP');
    ELSE
        EXECUTE format('ALTER SERVER %I OPTIONS (SET brokers %L)', '$SERVER', '$KL_BOOTSTRAP');
    END IF;
END
\$\$;
SELECT kafka_lake.create_source('$SOURCE', '$SERVER', '$TOPIC');
SELECT kafka_lake.create_contract('bench_bridge_machine', definition)
  FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
SELECT kafka_lake.create_source('$USER_SOURCE', '$SERVER', '$TOPIC', group_id => 'bench-bridge-user-$RUN',
                                contract => 'bench_bridge_machine');
SELECT kafka_lake.define_gold('$USER_SOURCE', '$USER_GOLD', grain => grain, metrics => metrics)
  FROM kafka_lake.golds WHERE gold = 'gold_daily_line_metrics';
SELECT kafka_lake.create_contract('bench_bridge_entity',
         regexp_replace(definition::text, '"natural_key": \[[^]]*\]',
                        '"entity": {"key": ["work_order_id", "machine_id"], "order_by": ["event_time"]}')::json)
  FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
SELECT kafka_lake.create_source('$ENTITY_SOURCE', '$SERVER', '$TOPIC', group_id => 'bench-bridge-entity-$RUN',
                                contract => 'bench_bridge_entity');
SELECT kafka_lake.define_gold('$ENTITY_SOURCE', '$ENTITY_GOLD', grain => grain, metrics => metrics)
  FROM kafka_lake.golds WHERE gold = 'gold_daily_line_metrics';
SQL

# land until every event is accepted (one call normally suffices)
land_all() {
	local src=$1 accepted=0
	for attempt in 1 2 3 4 5; do
		psql_q -c "SELECT sum(accepted) FROM kafka_lake.land('$src', max_records => $COUNT + 1000, timeout => '600 s')" >/dev/null
		accepted=$(psql_q -c "SELECT coalesce(sum(accepted_count), 0) FROM kafka_lake.batches b JOIN kafka_lake.sources s USING (source_id) WHERE s.source = '$src'")
		[ "$accepted" -ge "$COUNT" ] && break
	done
	if [ "$accepted" -ne "$COUNT" ]; then
		echo "bench/bridge.sh: expected $COUNT accepted events in $src, found $accepted" >&2
		exit 1
	fi
	echo "$accepted"
}
t0=$(now)
accepted=$(land_all "$SOURCE")
t1=$(now)
echo "land:     $(elapsed "$t0" "$t1") s ($accepted accepted)"

# let the landing's aftermath settle (autovacuum of the catalog, and of
# silver after an earlier run's drop_source; dirty buffers), so that the
# bridge is measured, not the background work it would compete with on a
# small machine
settle() {
	psql_q -c "VACUUM ANALYZE kafka_lake.accepted_events" -c "VACUUM ANALYZE kafka_lake.batches" \
		-c "VACUUM ANALYZE kafka_lake.coordinates" -c "VACUUM kafka_lake.silver_machine_events" \
		-c "CHECKPOINT" >/dev/null
}

# bridge source: prints "seconds source_hash", checks the run
bridge_one() {
	local src=$1 label=$2 steps result t0 t1 time
	steps=$(mktemp)
	t0=$(now)
	result=$(psql_q -F ' ' -c "SET client_min_messages = debug1" \
		-c "SELECT source_hash, selected_events, run_status, silver_rows, gold_rows, snapshot_status FROM kafka_lake.bridge('$src', '$DATE')" 2>"$steps")
	t1=$(now)
	sed -n 's/^DEBUG:  kafka_lake bridge of "[^"]*" [0-9-]*: /          /p' "$steps" >&2
	rm -f "$steps"
	time=$(elapsed "$t0" "$t1")
	read -r source_hash selected run_status silver_rows gold_rows snapshot_status <<<"$result"
	echo "bridge:   $label $time s (selected $selected, run $run_status, silver $silver_rows, gold $gold_rows, snapshot $snapshot_status)" >&2
	if [ "$selected" -ne "$COUNT" ] || [ "$run_status" != processed ]; then
		echo "bench/bridge.sh: unexpected bridge result: $result" >&2
		exit 1
	fi
	echo "$time $source_hash"
}

settle
read -r bridge_time source_hash <<<"$(bridge_one "$SOURCE" "machine_event_v1 (built-in gold):")"
[ -n "$source_hash" ] || exit 1

csv=$(psql_q -c "LOAD 'kafka_lake'" -c "SELECT (CASE WHEN current_setting('kafka_lake.landing_dir') LIKE '/%'
                                THEN current_setting('kafka_lake.landing_dir')
                                ELSE current_setting('data_directory') || '/' || current_setting('kafka_lake.landing_dir') END)
                        || '/' || a.path
                 FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
                 WHERE s.source = '$SOURCE' AND a.source_hash = '$source_hash'")
bytes=$(stat -c %s "$csv")
echo "csv:      $csv ($bytes bytes)"

# sort: as the caller's shell would run it, and in the C locale (faster,
# hence the stricter baseline); the ratio is printed for both
t0=$(now)
sort -o /dev/null "$csv"
t1=$(now)
sort_time=$(elapsed "$t0" "$t1")
t0=$(now)
LC_ALL=C sort -o /dev/null "$csv"
t1=$(now)
sort_c_time=$(elapsed "$t0" "$t1")
t0=$(now)
sum=$(sha256sum "$csv" | cut -d' ' -f1)
t1=$(now)
sha_time=$(elapsed "$t0" "$t1")
echo "sort:     $sort_time s (locale ${LC_ALL:-${LC_COLLATE:-${LANG:-C}}}); LC_ALL=C sort: $sort_c_time s"
echo "sha256sum: $sha_time s"
if [ "$sum" != "$source_hash" ]; then
	echo "bench/bridge.sh: sha256sum $sum differs from source_hash $source_hash" >&2
	exit 1
fi

# the same events, under a user-written copy of the contract and a gold
# declared with define_gold as the built-in one is
t0=$(now)
accepted=$(land_all "$USER_SOURCE")
t1=$(now)
echo "land:     $(elapsed "$t0" "$t1") s ($accepted accepted, user-written contract)"
settle
read -r user_time user_hash <<<"$(bridge_one "$USER_SOURCE" "user contract and define_gold:   ")"
[ -n "$user_hash" ] || exit 1
if [ "$user_hash" != "$source_hash" ]; then
	echo "bench/bridge.sh: the user-written contract gives source_hash $user_hash, not $source_hash" >&2
	exit 1
fi
differ=$(psql_q -c "SELECT count(*) FROM (
    (SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate::text, avg_cycle_time_ms::text
       FROM kafka_lake.gold_current WHERE source = '$SOURCE'
     EXCEPT SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate::text, avg_cycle_time_ms::text
       FROM kafka_lake.${USER_GOLD}_current)
    UNION ALL
    (SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate::text, avg_cycle_time_ms::text
       FROM kafka_lake.${USER_GOLD}_current
     EXCEPT SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate::text, avg_cycle_time_ms::text
       FROM kafka_lake.gold_current WHERE source = '$SOURCE')) d")
if [ "$differ" != 0 ]; then
	echo "bench/bridge.sh: the user-defined gold differs from gold_daily_line_metrics in $differ rows" >&2
	exit 1
fi
echo "user:     same source_hash, same gold rows as the built-in"

# the same events as versions of (work order, machine) entities
t0=$(now)
accepted=$(land_all "$ENTITY_SOURCE")
t1=$(now)
echo "land:     $(elapsed "$t0" "$t1") s ($accepted accepted, entity contract)"
settle
read -r entity_time entity_hash <<<"$(bridge_one "$ENTITY_SOURCE" "entity contract, latest version:")"
[ -n "$entity_hash" ] || exit 1
if [ "$entity_hash" != "$source_hash" ]; then
	echo "bench/bridge.sh: the entity contract gives source_hash $entity_hash, not $source_hash" >&2
	exit 1
fi
pairs=$(psql_q -c "SELECT count(DISTINCT (work_order_id, machine_id)) FROM kafka_lake.${SOURCE}_events WHERE business_date = '$DATE'")
entity_silver=$(psql_q -c "SELECT r.silver_rows FROM kafka_lake.runs r JOIN kafka_lake.sources s USING (source_id)
                            WHERE s.source = '$ENTITY_SOURCE' ORDER BY r.finished_at DESC LIMIT 1")
if [ "$entity_silver" != "$pairs" ]; then
	echo "bench/bridge.sh: the entity bridge has $entity_silver silver rows, not one per each of the $pairs pairs" >&2
	exit 1
fi
echo "entity:   same source_hash, one silver row per (work order, machine): $pairs"

awk -v b="$bridge_time" -v u="$user_time" -v e="$entity_time" -v s="$sort_time" -v c="$sort_c_time" -v h="$sha_time" 'BEGIN {
	printf "ratio:    bridge / (sort + sha256sum)         = %.3f / (%.3f + %.3f) = %.2f (target <= 2)\n", b, s, h, b / (s + h);
	printf "ratio:    bridge / (LC_ALL=C sort + sha256sum) = %.3f / (%.3f + %.3f) = %.2f\n", b, c, h, b / (c + h);
	printf "ratio:    user bridge / (sort + sha256sum)         = %.3f / (%.3f + %.3f) = %.2f (target <= 2)\n", u, s, h, u / (s + h);
	printf "ratio:    user bridge / (LC_ALL=C sort + sha256sum) = %.3f / (%.3f + %.3f) = %.2f\n", u, c, h, u / (c + h);
	printf "ratio:    user bridge / built-in bridge = %.2f\n", u / b;
	printf "ratio:    entity bridge / (sort + sha256sum)         = %.3f / (%.3f + %.3f) = %.2f\n", e, s, h, e / (s + h);
	printf "ratio:    entity bridge / (LC_ALL=C sort + sha256sum) = %.3f / (%.3f + %.3f) = %.2f\n", e, c, h, e / (c + h);
	printf "ratio:    entity bridge / built-in bridge = %.2f\n", e / b;
}'

if [ "${KEEP:-0}" != 1 ]; then
	psql_q -c "SELECT kafka_lake.drop_source('$SOURCE', drop_landing => true)" \
		-c "SELECT kafka_lake.drop_source('$USER_SOURCE', drop_landing => true)" \
		-c "SELECT kafka_lake.drop_source('$ENTITY_SOURCE', drop_landing => true)" >/dev/null
fi
