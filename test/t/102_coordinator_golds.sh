#!/usr/bin/env bash
# test/t/102_coordinator_golds.sh: what a coordinator combines beyond declared golds, and a
# shard's empty share of a date.  Two shards are clusters of the test's own (one consumer group,
# partitions {0,1} and {2,3}); a database of the harness's cluster lands the whole topic alone,
# another is the coordinator.
# Checked: a shard closes a date it has no event of (a certificate of none: 0 events, a closed
# snapshot without gold rows, exported as Parquet files of no row) while a server landing every partition still refuses one (P0002),
# and the coordinator certifies the date, its events and golds those of the single server; a SQL
# gold defined on both shards by a plain role is combined on the coordinator (a view over every
# shard's silver) with the single server's rows, computed with that role's rights, not the
# reader's (current_user in its SQL), and refused (42501, nothing run) once that role made its
# function SECURITY INVOKER; a reader needs SELECT on the view (42501); a SQL gold whose owner is
# no role of the coordinator, or a superuser there, is not combined (a NOTICE); the certificate pins the combined SQL
# gold's rows; pg_dump and a restore keep it; detach_shards drops its function; a SQL gold whose SQL differs on one shard is
# refused at attach (55000).  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 19
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
topic=coord102.events
group=kafka_lake.shards102.events
one=kl_co102_one
co=kl_co102_coord
shard() { echo "postgresql:///$2?host=$KL_TMP/pg.$1&port=$PGPORT"; }
a=$(shard a plant)
b=$(shard b plant)
role=analyst102

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 4 >/dev/null
fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" "$@" >/dev/null 2>&1; }
for c in a b; do
	extra_cluster $c
	q -d "$(shard $c postgres)" -c "CREATE DATABASE plant" -c "CREATE ROLE $role" -c "CREATE ROLE ghost102" >/dev/null
done
q -d postgres -c "SET client_min_messages = warning" -c "DROP ROLE IF EXISTS $role" -c "CREATE ROLE $role" >/dev/null
for d in $one $co; do
	q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $d" -c "CREATE DATABASE $d" >/dev/null
done
for d in $a $b $one $co; do q -d $d -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1; done
for d in $a $b $one; do
	q -d $d -c "CREATE SERVER co102 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" >/dev/null
done
q -d $a -c "SELECT kafka_lake.create_source('orders', 'co102', '$topic', group_id => '$group', partitions => '{0,1}')" >/dev/null
q -d $b -c "SELECT kafka_lake.create_source('orders', 'co102', '$topic', group_id => '$group', partitions => '{2,3}')" >/dev/null
q -d $one -c "SELECT kafka_lake.create_source('orders', 'co102', '$topic')" >/dev/null
# a SQL gold by a plain role, alike on each shard and on the single server; current_user says whose rights it ran with
gold_sql="SELECT product_code, sum(units_produced) AS units, count(*) AS events, current_user::text AS who,
                 string_agg(event_id, ',' ORDER BY event_id) AS ids FROM silver GROUP BY product_code"
for d in $a $b $one; do
	q -d $d >/dev/null <<SQL
GRANT USAGE ON SCHEMA kafka_lake TO $role;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO $role;
GRANT SELECT, TRIGGER ON kafka_lake.orders_records TO $role;
GRANT SELECT ON kafka_lake.silver_machine_events TO $role;
SET ROLE $role;
SELECT kafka_lake.define_gold('orders', 'by_product', ARRAY['product_code'], sql => \$q\$$gold_sql\$q\$);
SQL
done
# one by a role the coordinator does not have, one by a superuser
for d in $a $b; do
	q -d $d -c "SELECT kafka_lake.define_gold('orders', 'by_super', ARRAY['plant_id'], sql => 'SELECT plant_id, count(*) AS n FROM silver GROUP BY 1')" >/dev/null
	q -d $d -c "GRANT USAGE ON SCHEMA kafka_lake TO ghost102" -c "GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO ghost102" \
		-c "GRANT SELECT, TRIGGER ON kafka_lake.orders_records TO ghost102" -c "GRANT SELECT ON kafka_lake.silver_machine_events TO ghost102" \
		-c "SET ROLE ghost102" -c "SELECT kafka_lake.define_gold('orders', 'ghostly', ARRAY['line_id'], sql => 'SELECT line_id, count(*) AS n FROM silver GROUP BY 1')" >/dev/null
done
q -d $co >/dev/null <<SQL
CREATE EXTENSION postgres_fdw;
CREATE SERVER shard_a FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$KL_TMP/pg.a', port '$PGPORT', dbname 'plant');
CREATE SERVER shard_b FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$KL_TMP/pg.b', port '$PGPORT', dbname 'plant');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard_a OPTIONS (user '$PGUSER');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard_b OPTIONS (user '$PGUSER');
SQL

# 2026-08-10: every partition has events; 2026-08-11: only partitions 0 and 1 (shard A's)
fill --partitions 4 --count 400 --start 1 --date 2026-08-10
fill --partitions 2 --count 200 --start 1001 --date 2026-08-11
for d in $a $b $one; do
	q -d $d -c "SELECT * FROM kafka_lake.land('orders')" -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-10')" >/dev/null
done
q -d $a -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-11')" >/dev/null
q -d $one -c "SELECT * FROM kafka_lake.close_date('orders', '2026-08-11')" >/dev/null

is "$(q -d $b -c "SELECT status || ' ' || selected_events || ' ' || partitions FROM kafka_lake.close_date('orders', '2026-08-11')")
$(q -d $b -c "SELECT count(*) FROM kafka_lake.by_product_current WHERE business_date = '2026-08-11'")" \
	"closed 0 4
0" "shard B closes a date it has no event of: a certificate of none, a closed snapshot without gold rows"
is "$(q -d $b -c "SELECT status FROM kafka_lake.close_date('orders', '2026-08-11')")
$(q -d $b -c "SELECT string_agg(partition || ':' || owned || '<' || through_offset, ',' ORDER BY partition) FROM kafka_lake.date_closing_partitions p
               JOIN kafka_lake.date_closings c USING (closing_id) WHERE c.business_date = '2026-08-11'")" \
	"already_closed
0:false<0,1:false<0,2:true<100,3:true<100" "closed again, already_closed; its partitions certified through what it landed (owned) and nothing (not owned)"
mkdir -p "$KL_TMP/exp102"; chown postgres "$KL_TMP/exp102"
is "$(q -d $b -c "SET kafka_lake.export_dir = '$KL_TMP/exp102'" -c "SELECT string_agg(relation || ':' || rows || ':' || status, ',' ORDER BY relation) FROM kafka_lake.export('orders', '2026-08-11')")" \
	"by_product:0:exported,by_super:0:exported,ghostly:0:exported,gold_daily_line_metrics:0:exported,silver_machine_events:0:exported" \
	"the empty share's closed snapshot exports as Parquet: every relation, no row"
source "$(dirname "$0")/../parquet/lib.sh"
is "$(pq_reader sql "SELECT count(*)::INTEGER AS n FROM read_parquet('$KL_TMP/exp102/orders/*/business_date=2026-08-11/*.parquet')")" \
	'["0"]' "DuckDB reads those files: no row"
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_co102_whole" -c "CREATE DATABASE kl_co102_whole" >/dev/null
q -d kl_co102_whole -c "CREATE EXTENSION kafka_lake CASCADE" -c "CREATE SERVER co102 FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" \
	-c "SELECT kafka_lake.create_source('whole', 'co102', '$topic')" -c "SELECT * FROM kafka_lake.land('whole')" >/dev/null 2>&1
is "$(q -d kl_co102_whole -c "\\set VERBOSITY verbose" -c "SELECT * FROM kafka_lake.close_date('whole', '2026-08-12')" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p')" \
	"P0002" "a server that lands every partition still refuses a date without events (P0002)"
q -d postgres -c "DROP DATABASE kl_co102_whole" >/dev/null

q -d $co -c "SELECT * FROM kafka_lake.attach_shards('orders', ARRAY['shard_a', 'shard_b'])" >/dev/null 2>"$KL_TMP/co102.notice"
like "$(cat "$KL_TMP/co102.notice")" 'SQL gold "ghostly" of source "orders" is not combined here: its owner "ghost102" is no role of this database' \
	"a SQL gold whose owner is no role of the coordinator is not combined, with a NOTICE"
like "$(cat "$KL_TMP/co102.notice")" "SQL gold \"by_super\" of source \"orders\" is not combined here: its owner \"$PGUSER\" is a superuser of this database" \
	"nor one whose owner is a superuser here: a shard's catalog never gives a superuser's rights on the coordinator"
is "$(q -d $co -c "SELECT gold_views::text || ' ' || sql_golds::text FROM kafka_lake.shards WHERE shard_number = 1")" \
	"{orders_by_product,orders_gold_daily_line_metrics} {\"by_product\": \"$role\"}" "the SQL gold by $role is combined: kafka_lake.orders_by_product"
is "$(q -d $co -c "SELECT DISTINCT status || ' ' || selected_events FROM kafka_lake.certify_shards('orders', '2026-08-11')" | sort | tr '\n' ' ')" \
	"certified 0 certified 200 " "the coordinator certifies the date of shard B's empty share"
is "$(q -d $co -c "SELECT sum(selected_events) FROM kafka_lake.certify_shards('orders', '2026-08-11')")" \
	"$(q -d $one -c "SELECT selected_events FROM kafka_lake.date_closings WHERE business_date = '2026-08-11' AND status = 'closed'")" \
	"with the single server's events of the date"
gold_one() { q -d $one -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM (SELECT business_date, $2 FROM kafka_lake.${1}_current WHERE business_date = '$3') g"; }
gold_co() { q -d $co -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM (SELECT business_date, $2 FROM kafka_lake.orders_${1} WHERE business_date = '$3') g"; }
is "$(gold_co gold_daily_line_metrics "plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms" 2026-08-11)" \
	"$(q -d $one -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM (SELECT business_date, plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms FROM kafka_lake.gold_current WHERE source = 'orders' AND business_date = '2026-08-11') g")" \
	"its combined built-in gold is the single server's"
ok "[ \"\$(gold_one by_product 'product_code, units, events, who, ids' 2026-08-10 | cut -d' ' -f2)\" -gt 1 ]" "the single server's SQL gold has several rows"
for d in 2026-08-10 2026-08-11; do
	is "$(gold_co by_product 'product_code, units, events, who, ids' $d)" "$(gold_one by_product 'product_code, units, events, who, ids' $d)" \
		"the combined SQL gold of $d is the single server's, computed as $role (not as the superuser reading it)"
done
q -d $co -c "CREATE ROLE reader102" >/dev/null 2>&1
is "$(q -d $co -c "GRANT USAGE ON SCHEMA kafka_lake TO reader102" -c "SET ROLE reader102" -c "\\set VERBOSITY verbose" \
	-c "SELECT * FROM kafka_lake.shard_gold('orders', 'by_product', '2026-08-10') AS g(product_code text, units bigint, events bigint, who text, ids text)" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p')" \
	"42501" "shard_gold: a role without SELECT on the combined gold's view reads nothing (42501)"
# the SQL gold's owner turns its coordinator function into SECURITY INVOKER, hoping the next reader is a superuser
q -d $co -c "SET ROLE $role" -c "ALTER FUNCTION kafka_lake.orders_by_product_combine(text) SECURITY INVOKER" >/dev/null
like "$(q -d $co -c "\\set VERBOSITY verbose" -c "SELECT * FROM kafka_lake.orders_by_product WHERE business_date = '2026-08-10'" 2>&1)" \
	'42501: function kafka_lake.orders_by_product_combine(text) is not as role "analyst102" defined it: it is no longer SECURITY DEFINER' \
	"made SECURITY INVOKER by its owner, the combined SQL gold is refused (42501), never run as the reader"
q -d $co -c "ALTER FUNCTION kafka_lake.orders_by_product_combine(text) SECURITY DEFINER" >/dev/null
# pg_dump and a restore keep the combined SQL gold: its function (still its owner's) and its view
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS ${co}_copy" -c "CREATE DATABASE ${co}_copy" >/dev/null
pg_dump -d $co 2>/dev/null | psql -X -q -d ${co}_copy >/dev/null 2>"$KL_TMP/co102.restore"
is "$(q -d ${co}_copy -c "SELECT pg_get_userbyid(proowner) || ' ' || prosecdef FROM pg_proc WHERE proname = 'orders_by_product_combine'")
$(q -d ${co}_copy -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) || ' ' || count(*) FROM (SELECT business_date, product_code, units, events, who, ids FROM kafka_lake.orders_by_product WHERE business_date = '2026-08-10') g")" \
	"$role true
$(gold_one by_product 'product_code, units, events, who, ids' 2026-08-10)" \
	"pg_dump and a restore keep the combined SQL gold: its function, still its owner's, and its rows"
q -d postgres -c "DROP DATABASE ${co}_copy" >/dev/null
is "$(q -d $co -c "SELECT shards->'golds' ? 'orders_by_product' FROM kafka_lake.shard_certificates WHERE business_date = '2026-08-11' AND status = 'certified'")
$(q -d $co -c "SELECT kafka_lake.detach_shards('orders')" -c "SELECT count(*) FROM pg_proc WHERE proname = 'orders_by_product_combine'")" \
	"t

0" "the certificate pins the combined SQL gold's rows; detach_shards drops its function"

# shard B defines the SQL gold again with other SQL (the same columns): no longer alike
other_sql=$(echo "$gold_sql" | sed 's/sum(units_produced)/sum(defect_count)/')
q -d $b -c "SET ROLE $role" -c "SELECT kafka_lake.define_gold('orders', 'by_product', ARRAY['product_code'], sql => \$q\$$other_sql\$q\$)" >/dev/null
like "$(q -d $co -c "\\set VERBOSITY verbose" -c "SELECT * FROM kafka_lake.attach_shards('orders', ARRAY['shard_a', 'shard_b'])" 2>&1)" \
	'55000: gold "by_product" of source "orders" is not defined alike on every shard' \
	"a SQL gold whose SQL differs on one shard is refused at attach_shards (55000)"

for d in $one $co; do q -d postgres -c "DROP DATABASE $d" >/dev/null; done
q -d postgres -c "DROP OWNED BY $role" -c "DROP ROLE $role" -c "DROP ROLE IF EXISTS reader102" >/dev/null 2>&1
