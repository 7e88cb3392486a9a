#!/usr/bin/env bash
# test/t/101_coordinator.sh: a coordinator database reads a topic landed by two shards as one,
# through postgres_fdw, and certifies its dates across them.  The shards are clusters of the
# test's own (one consumer group, disjoint partitions; a third later); a database of the
# harness's cluster lands the whole topic alone, another is the coordinator (kafka_lake and
# postgres_fdw, no landing).
# Checked: attach_shards() makes kafka_lake.<source>_records, _events and _silver over both
# shards, whose rows are the single server's, read concurrently (Async Foreign Scan, the date
# pushed down), and combined golds (the built-in one, and a declared gold of every kind of
# metric) whose rows are the single server's to the last digit; shard_partitions() shows one
# owner per partition; certify_shards() refuses a date a shard has not closed (55000, naming
# it), certifies a date both closed with the combined source_hash (SHA-256 of the sorted shard
# hashes), unchanged when called again; close_date() on the coordinator is certify_shards() as
# close_date's row, and refuses while a shard's server is down (08006, naming it, nothing
# recorded, nothing lost once it is up); pg_dump keeps the coordinator; with a third shard of
# another consumer group landing a partition another one owns: two owners refused, then the
# same offsets landed twice; an event_id, and a natural key, on two shards refused;
# detach_shards() forgets the views.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 29
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
topic=coord101.events
group=kafka_lake.shards101.events
one=kl_co101_one
co=kl_co101_coord
# the shards are clusters of their own (database plant in each), as on servers of their own
shard() { echo "postgresql:///$2?host=$KL_TMP/pg.$1&port=$PGPORT"; }
a=$(shard a plant)
b=$(shard b plant)
x=$(shard x plant)

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 4 >/dev/null
fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 4 "$@" >/dev/null 2>&1; }
for c in a b x; do
	extra_cluster $c
	q -d "$(shard $c postgres)" -c "CREATE DATABASE plant" >/dev/null
done
for d in $one $co; do
	q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $d" -c "CREATE DATABASE $d" >/dev/null
done
for d in $a $b $x $one $co; do q -d $d -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1; done
for d in $a $b $x $one; do
	q -d $d -c "CREATE SERVER co101 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" >/dev/null
done
q -d $a -c "SELECT kafka_lake.create_source('orders', 'co101', '$topic', group_id => '$group', partitions => '{0,1}')" >/dev/null
q -d $b -c "SELECT kafka_lake.create_source('orders', 'co101', '$topic', group_id => '$group', partitions => '{2,3}')" >/dev/null
q -d $one -c "SELECT kafka_lake.create_source('orders_one', 'co101', '$topic')" >/dev/null
# a declared gold of every kind of metric, on each shard and on the single server
metrics='{"units": {"sum": "units_produced"}, "events": {"count": "*"}, "max_cycle": {"max": "cycle_time_ms"},
          "min_units": {"min": "units_produced"}, "share": {"ratio": ["defects", "units"], "round": 5},
          "avg_cycle": {"avg": "cycle_time_ms", "round": 3, "rounding": "python"}, "defects": {"sum": "defect_count"},
          "avg_half_up": {"avg": "defect_count", "round": 2}, "per_event": {"ratio": ["units", "events"], "round": 4, "rounding": "python"}}'
for d in $a $b; do q -d $d -c "SELECT kafka_lake.define_gold('orders', 'by_machine', ARRAY['machine_id'], '$metrics')" >/dev/null; done
q -d $one -c "SELECT kafka_lake.define_gold('orders_one', 'by_machine', ARRAY['machine_id'], '$metrics')" >/dev/null
q -d $co >/dev/null <<SQL
CREATE EXTENSION postgres_fdw;
CREATE SERVER shard_a FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$KL_TMP/pg.a', port '$PGPORT', dbname 'plant');
CREATE SERVER shard_b FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$KL_TMP/pg.b', port '$PGPORT', dbname 'plant');
CREATE SERVER shard_x FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$KL_TMP/pg.x', port '$PGPORT', dbname 'plant');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard_a OPTIONS (user '$PGUSER');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard_b OPTIONS (user '$PGUSER');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard_x OPTIONS (user '$PGUSER');
SQL

fill --count 400 --start 1 --date 2026-08-04
for d in $a $b; do q -d $d -c "SELECT * FROM kafka_lake.land('orders')" -c "SELECT * FROM kafka_lake.bridge('orders', '2026-08-04')" >/dev/null; done
q -d $one -c "SELECT * FROM kafka_lake.land('orders_one')" -c "SELECT * FROM kafka_lake.close_date('orders_one', '2026-08-04')" >/dev/null

is "$(q -d $co -c "SELECT string_agg(shard || ':' || shard_number || ':' || partitions::text || ':' || relations, ' ' ORDER BY shard_number)
                   FROM kafka_lake.attach_shards('orders', ARRAY['shard_a', 'shard_b'])")" \
	"shard_a:1:{0,1}:10 shard_b:2:{2,3}:10" "attach_shards: two shards, their partitions, ten foreign tables each"
like "$(q -d $co -c "CREATE SERVER co101 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" \
	-c "SELECT kafka_lake.create_source('orders', 'co101', '$topic')" 2>&1)" 'source "orders" already exists in this database' \
	"the coordinator lands no source of the name it coordinates (create_source: 42710)"
state_of() { q -d $co -c "\\set VERBOSITY verbose" -c "$1" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' | head -1; }
is "$(state_of "SELECT * FROM kafka_lake.attach_shards(NULL, ARRAY['shard_a'])") $(state_of "SELECT * FROM kafka_lake.attach_shards('other', ARRAY['shard_a', 'shard_a'])") $(state_of "SELECT * FROM kafka_lake.attach_shards('other', ARRAY['co101'])") $(state_of "SELECT * FROM kafka_lake.attach_shards('orders', ARRAY['shard_a'])") $(state_of "SELECT * FROM kafka_lake.attach_shards('other', ARRAY['shard_a'])")" \
	"22004 22023 42704 42710 42704" \
	"attach_shards refuses a NULL, a shard twice, a server not of postgres_fdw, a source attached already, a shard without the source"
is "$(q -d $co -c "SELECT md5(string_agg(event_id, ',' ORDER BY event_id)) || ' ' || count(*) FROM kafka_lake.orders_events WHERE business_date = '2026-08-04'")" \
	"$(q -d $one -c "SELECT md5(string_agg(event_id, ',' ORDER BY event_id)) || ' ' || count(*) FROM kafka_lake.orders_one_events WHERE business_date = '2026-08-04'")" \
	"the coordinator's orders_events of the date are the single server's events"
is "$(q -d $co -c "SELECT string_agg(shard || ':' || n, ',' ORDER BY shard) FROM (SELECT shard, count(*) n FROM kafka_lake.orders_records GROUP BY shard) r")" \
	"shard_a:200,shard_b:200" "orders_records says which shard holds each record"
plan_text=$(q -d $co -c "EXPLAIN (VERBOSE) SELECT count(*) FROM kafka_lake.orders_events WHERE business_date = '2026-08-04'")
is "$(echo "$plan_text" | grep -c "Async Foreign Scan")" 2 "the shards are read concurrently: an Async Foreign Scan each"
is "$(echo "$plan_text" | grep -c "Remote SQL: .* WHERE ((business_date = '2026-08-04'))")" 2 "with the date pushed down to each"
is "$(q -d $co -c "SELECT string_agg(concat_ws('/', plant_id, line_id, product_code) || ':' || u, ',' ORDER BY 1)
                   FROM (SELECT plant_id, line_id, product_code, sum(units_produced) u FROM kafka_lake.orders_silver
                          WHERE business_date = '2026-08-04' GROUP BY 1, 2, 3) g")" \
	"$(q -d $one -c "SELECT string_agg(concat_ws('/', plant_id, line_id, product_code) || ':' || units_produced, ',' ORDER BY 1)
                    FROM kafka_lake.gold_current WHERE source = 'orders_one' AND business_date = '2026-08-04'")" \
	"silver of the shards' current snapshots, summed per line and product, gives the single server's gold"
is "$(q -d $one -c "SELECT (SELECT count(*) FROM kafka_lake.gold_current WHERE source = 'orders_one' AND business_date = '2026-08-04') > 1
                           AND (SELECT count(*) FROM kafka_lake.by_machine_current WHERE business_date = '2026-08-04') > 1")" t \
	"the single server publishes golds of several rows for the date"
is "$(q -d $co -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM (SELECT business_date, plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms
                   FROM kafka_lake.orders_gold_daily_line_metrics WHERE business_date = '2026-08-04') g")" \
	"$(q -d $one -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM (SELECT business_date, plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms
                    FROM kafka_lake.gold_current WHERE source = 'orders_one' AND business_date = '2026-08-04') g")" \
	"the combined built-in gold has the single server's rows, rate and average to the last digit"
is "$(q -d $co -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM kafka_lake.orders_by_machine g WHERE business_date = '2026-08-04'")" \
	"$(q -d $one -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM (SELECT business_date, machine_id, units, events, max_cycle, min_units, share, avg_cycle, defects, avg_half_up, per_event
                    FROM kafka_lake.by_machine_current WHERE business_date = '2026-08-04') g")" \
	"and so has a declared gold of sums, counts, minima, maxima, averages and ratios, both roundings"
is "$(q -d $co -c "SELECT string_agg(partition || ':' || status || ':' || array_to_string(owners, '+'), ',' ORDER BY partition) FROM kafka_lake.shard_partitions('orders')")" \
	"0:owned:shard_a,1:owned:shard_a,2:owned:shard_b,3:owned:shard_b" "shard_partitions: one owner each"

err=$(q -d $co -c "SELECT * FROM kafka_lake.certify_shards('orders', '2026-08-04')" 2>&1 >/dev/null)
like "$err" 'shard "shard_a" has not closed it' "certify_shards refuses a date the shards have not closed, naming the first"
for d in $a $b; do q -d $d -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-04')" >/dev/null; done
combined=$(for d in $a $b; do q -d $d -c "SELECT source_hash FROM kafka_lake.date_closings WHERE business_date = '2026-08-04' AND status = 'closed'"; done | LC_ALL=C sort | sha256sum | cut -d' ' -f1)
is "$(q -d $co -c "SELECT DISTINCT status || ' ' || combined_hash FROM kafka_lake.certify_shards('orders', '2026-08-04')")" \
	"certified $combined" "both closed: certified, the combined hash the SHA-256 of the sorted shard hashes, one per line"
is "$(q -d $co -c "SELECT sum(selected_events) FROM kafka_lake.certify_shards('orders', '2026-08-04')") $(q -d $co -c "SELECT DISTINCT status FROM kafka_lake.certify_shards('orders', '2026-08-04')")" \
	"$(q -d $one -c "SELECT selected_events FROM kafka_lake.date_closings WHERE business_date = '2026-08-04' AND status = 'closed'") unchanged" \
	"its events are the single server's; certified again, unchanged"

is "$(q -d $co -c "SELECT status || ' ' || closing_id || ' ' || coalesce(snapshot_id::text, 'none') || ' ' || source_hash || ' ' || selected_events || ' ' || partitions
                   FROM kafka_lake.close_date('orders', '2026-08-04')")" \
	"already_closed $(q -d $co -c "SELECT certificate_id FROM kafka_lake.shard_certificates WHERE status = 'certified'") none $combined $(q -d $one -c "SELECT selected_events FROM kafka_lake.date_closings WHERE business_date = '2026-08-04' AND status = 'closed'") 4" \
	"close_date on the coordinator is certify_shards, as close_date's row: the certificate, the combined hash, every event and owned partition"
like "$(q -d $co -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-04', cutoff => now() - interval '1 hour')" 2>&1)" \
	"takes no cutoff and no export" "with no cutoff of its own: each shard closed with its own"
extra_cluster_stop b
err=$(q -d $co -c "\\set VERBOSITY verbose" -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-04')" 2>&1 >/dev/null)
like "$err" '08006: shard "shard_b" of source "orders" does not answer' "shard_b's server down (stopped as by a crash): close_date on the coordinator refuses, 08006, naming it"
is "$(q -d $co -c "SELECT count(*) FROM kafka_lake.shard_certificates WHERE source = 'orders'")" 1 "and nothing was recorded"
extra_cluster_start b
is "$(q -d $co -c "SELECT status FROM kafka_lake.close_date('orders', '2026-08-04')")" already_closed \
	"shard_b up again: nothing was lost, the date is as certified"

# a third shard, given its own consumer group, lands partition 3 that shard_b owns
q -d $x -c "SELECT kafka_lake.create_source('orders', 'co101', '$topic', partitions => '{3}')" >/dev/null
q -d $co -c "SELECT kafka_lake.detach_shards('orders')" >/dev/null
err=$(q -d $co -c "SELECT * FROM kafka_lake.attach_shards('orders', ARRAY['shard_a', 'shard_b', 'shard_x'])" 2>&1 >/dev/null)
like "$err" 'gold "by_machine" of source "orders" is not defined alike on every shard' \
	"a shard that lacks a gold the others define is refused at attach_shards (55000)"
q -d $x -c "SELECT kafka_lake.define_gold('orders', 'by_machine', ARRAY['machine_id'], '$metrics')" >/dev/null
fill --count 400 --start 1001 --date 2026-08-05
for d in $a $b $x; do q -d $d -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-05')" >/dev/null; done
q -d $co -c "SELECT * FROM kafka_lake.attach_shards('orders', ARRAY['shard_a', 'shard_b', 'shard_x'])" >/dev/null
is "$(q -d $co -c "SELECT status || ':' || array_to_string(owners, '+') FROM kafka_lake.shard_partitions('orders') WHERE partition = 3")" \
	"overlap:shard_b+shard_x" "shard_partitions shows two owners of partition 3"
err=$(q -d $co -c "SELECT * FROM kafka_lake.certify_shards('orders', '2026-08-05')" 2>&1 >/dev/null)
like "$err" 'partition 3 of topic "coord101.events" has two owners' "certify_shards refuses the date: partition 3 has two owners"
q -d $b -c "SELECT kafka_lake.set_partitions('orders', '{2}')" -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-05')" >/dev/null
err=$(q -d $co -c "SELECT * FROM kafka_lake.certify_shards('orders', '2026-08-05')" 2>&1 >/dev/null)
like "$err" 'shards "shard_b" and "shard_x" both landed offsets 100 to 199 of partition 3' \
	"shard_b closes again without partition 3: one owner each now, but both landed its records of the date: refused"
# one event_id accepted on both shards (its records in partitions 0 and 2)
value=$(python3 -c 'import json,sys; print(json.dumps({"event_id": "dup101", "schema_version": 1, "event_time": "2026-08-06T08:00:00+09:00",
  "business_date": "2026-08-06", "plant_id": "plant-01", "line_id": "line-01", "work_order_id": "wo-000001", "machine_id": "machine-001",
  "product_code": "prd-a", "operation": "assembly", "units_produced": 10, "defect_count": 0, "cycle_time_ms": 1200}).encode().hex())')
for p in 0 2; do "$KL_BROKER" send --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partition $p --value-hex "$value" >/dev/null 2>&1; done
# (and an event of the date for shard_x, which cannot close a date it has none of)
"$KL_BROKER" send --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partition 3 --value-hex "$(echo "$value" | python3 -c 'import sys; print(bytes.fromhex(sys.stdin.read().strip()).replace(b"dup101", b"one101").hex())')" >/dev/null 2>&1
for d in $a $b $x; do q -d $d -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-06')" >/dev/null; done
err=$(q -d $co -c "SELECT * FROM kafka_lake.certify_shards('orders', '2026-08-06')" 2>&1 >/dev/null)
like "$err" 'event_id "dup101" is accepted by shards shard_a and shard_b' \
	"an event_id accepted on two shards is refused: one server would count it once"
# two events of one natural key (work order, machine, event time), with other event_ids, on both shards
for p in 0 2; do
	"$KL_BROKER" send --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partition $p \
		--value-hex "$(echo "$value" | python3 -c 'import sys; print(bytes.fromhex(sys.stdin.read().strip()).replace(b"dup101", b"nk101-'$p'").replace(b"08-06", b"08-07").hex())')" >/dev/null 2>&1
done
"$KL_BROKER" send --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partition 3 \
	--value-hex "$(echo "$value" | python3 -c 'import sys; print(bytes.fromhex(sys.stdin.read().strip()).replace(b"dup101", b"nk101-x").replace(b"08-06", b"08-07").replace(b"wo-000001", b"wo-000002").hex())')" >/dev/null 2>&1
for d in $a $b $x; do q -d $d -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-07')" >/dev/null; done
err=$(q -d $co -c "SELECT * FROM kafka_lake.certify_shards('orders', '2026-08-07')" 2>&1 >/dev/null)
like "$err" 'natural key (work_order_id, machine_id, event_time) = (wo-000001,machine-001,"2026-08-06 23:00:00+00")' \
	"a natural key in the silver of two shards is refused: one server's silver keeps it once"
# pg_dump of the coordinator keeps the shards, the certificates, the views
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${co}_copy" -c "CREATE DATABASE ${co}_copy" >/dev/null
pg_dump -d $co 2>/dev/null | psql -X -q -d ${co}_copy >/dev/null 2>"$KL_TMP/co101.restore"
is "$(q -d ${co}_copy -c "SELECT (SELECT count(*) FROM kafka_lake.shards) || ' ' || (SELECT count(*) FROM kafka_lake.shard_certificates)
                           || ' ' || (SELECT count(*) FROM kafka_lake.orders_events WHERE business_date = '2026-08-04')")" \
	"$(q -d $co -c "SELECT (SELECT count(*) FROM kafka_lake.shards) || ' ' || (SELECT count(*) FROM kafka_lake.shard_certificates)
                     || ' ' || (SELECT count(*) FROM kafka_lake.orders_events WHERE business_date = '2026-08-04')")" \
	"pg_dump and a restore keep the coordinator: its shards, certificates and views"
q -d postgres -c "DROP DATABASE ${co}_copy" >/dev/null
is "$(q -d $co -c "SELECT kafka_lake.detach_shards('orders')" -c "SELECT count(*) FROM pg_class WHERE relnamespace = 'kafka_lake'::regnamespace AND relname LIKE 'orders\\_%'")" \
	"
0" "detach_shards removes the views and foreign tables"
is "$(q -d $co -c "SELECT count(*) || ' ' || string_agg((SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(shards->'golds') k), '')
                   FROM kafka_lake.shard_certificates WHERE source = 'orders' AND status = 'certified'")" \
	"1 orders_by_machine,orders_gold_daily_line_metrics" "the certificate stays, with the combined golds' digests of its date"

for d in $one $co; do q -d postgres -c "DROP DATABASE $d" >/dev/null; done
