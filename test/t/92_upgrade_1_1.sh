#!/usr/bin/env bash
# test/t/92_upgrade_1_1.sh: a database created at kafka_lake 1.1 keeps everything it landed,
# defined and bridged through ALTER EXTENSION kafka_lake UPDATE to 1.2.  At 1.1: an orders
# source and a seed source, a declared gold and a SQL gold of a plain role, a bridged date, a
# record re-admitted.  After the update: the
# records, silver and golds read the same, verify() is clean, the date bridges to the same
# source_hash (skipped), the golds' as-of functions keep their owner and grants and now refuse
# a snapshot of another source (22023) instead of answering no rows, as gold_as_of() does,
# source_status counts the re-admitted record once, claim_landing() exists, and the updated
# database holds the same extension objects as one created at 1.2.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 14
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
qerr() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@" 2>&1 >/dev/null; }
db=kl_up11
topic=upgrade11.orders
seed_topic=upgrade11.seed

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$seed_topic" 1 >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$seed_topic" --count 20 --partitions 1 >/dev/null 2>&1
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "DROP ROLE IF EXISTS t92_analyst" -c "CREATE ROLE t92_analyst" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.1' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.1 "the extension is created at 1.1"

q -d $db >/dev/null <<SQL
CREATE SERVER up_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_contract('orders92', '{"type": "object",
  "properties": {"order_id": {"type": "string"}, "day": {"type": "string", "format": "date"},
                 "country": {"type": "string"}, "amount": {"type": "number", "minimum": 0, "maximum": 100}},
  "required": ["order_id", "day", "country", "amount"], "event_id": "order_id",
  "business_date": {"field": "day"}}');
SELECT kafka_lake.create_source('orders92', 'up_srv', '$topic', contract => 'orders92');
SELECT kafka_lake.create_source('seed92', 'up_srv', '$seed_topic');
SELECT kafka_lake.produce('up_srv', '$topic', convert_to(format(
         '{"order_id": "o-%s", "day": "2026-07-07", "country": "%s", "amount": %s}',
         i, CASE WHEN i % 2 = 0 THEN 'DE' ELSE 'FR' END, i * 30), 'UTF8'))
  FROM generate_series(1, 4) i;
SELECT * FROM kafka_lake.land('orders92');
SELECT * FROM kafka_lake.land('seed92');
GRANT USAGE ON SCHEMA kafka_lake TO t92_analyst;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO t92_analyst;
GRANT SELECT, TRIGGER ON kafka_lake.orders92_records TO t92_analyst;
SELECT kafka_lake.define_gold('orders92', 'orders92_by_country', ARRAY['country'],
                              '{"revenue": {"sum": "amount"}, "orders": {"count": "*"}}');
SET ROLE t92_analyst;
SELECT kafka_lake.define_gold('orders92', 'orders92_who', ARRAY[]::text[],
                              sql => 'SELECT count(*) AS n, current_user::text AS who FROM silver');
RESET ROLE;
GRANT EXECUTE ON FUNCTION kafka_lake.orders92_by_country_as_of(bigint) TO t92_analyst;
SELECT * FROM kafka_lake.bridge('orders92', '2026-07-07');
SELECT * FROM kafka_lake.bridge('seed92', '2026-06-29');
-- the order over 100 is quarantined; a fixed version re-admits it
SELECT kafka_lake.create_contract('orders92', '{"type": "object",
  "properties": {"order_id": {"type": "string"}, "day": {"type": "string", "format": "date"},
                 "country": {"type": "string"}, "amount": {"type": "number", "minimum": 0}},
  "required": ["order_id", "day", "country", "amount"], "event_id": "order_id",
  "business_date": {"field": "day"}}');
SELECT kafka_lake.alter_source('orders92', 'orders92');
SELECT * FROM kafka_lake.readmit('orders92');
SQL
orders_snap=$(q -d $db -c "SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id) WHERE source = 'orders92'")
seed_snap=$(q -d $db -c "SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id) WHERE source = 'seed92'")
state() {
	q -d $db -c "SELECT md5(string_agg(r::text, ',' ORDER BY r.\"offset\", r.batch_id)) FROM kafka_lake.orders92_records r" \
	  -c "SELECT md5(string_agg(s::text, ',' ORDER BY s::text)) FROM kafka_lake.orders92_silver s" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.orders92_by_country_as_of($orders_snap) g" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.orders92_who_as_of($orders_snap) g" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.gold_as_of($seed_snap) g" \
	  -c "SELECT string_agg(p.proname || ':' || pg_get_userbyid(p.proowner) || ':' || coalesce(p.proacl::text, '-'), ',' ORDER BY p.proname)
	        FROM pg_proc p WHERE p.pronamespace = 'kafka_lake'::regnamespace AND p.proname LIKE 'orders92%'"
}
before=$(state)
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.gold_as_of($orders_snap)")" 0 \
	"at 1.1 gold_as_of() of an orders snapshot answers no rows"
is "$(q -d $db -c "SELECT accepted || ' ' || quarantined FROM kafka_lake.source_status WHERE source = 'orders92'")" "4 1" \
	"at 1.1 source_status counts the re-admitted order twice"

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.2'\" >/dev/null 2>'$KL_TMP/up11.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.2' succeeds"
[ -s "$KL_TMP/up11.err" ] && diag "$(cat "$KL_TMP/up11.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.2 "the extension is at 1.2"
is "$(state)" "$before" "records, silver and golds read the same; the as-of functions keep their owners and grants"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('orders92')") $(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('seed92')")" \
	"0 0" "verify() is clean"
is "$(q -d $db -c "SELECT adapter_status || ' ' || run_status FROM kafka_lake.bridge('seed92', '2026-06-29')")" \
	"reused skipped" "the seed's date bridges to the same source_hash"
like "$(qerr -d $db -c "SELECT * FROM kafka_lake.gold_as_of($orders_snap)")" "does not publish gold_daily_line_metrics" \
	"gold_as_of() of an orders snapshot is refused now"
like "$(qerr -d $db -c "SELECT * FROM kafka_lake.orders92_who_as_of($seed_snap)")" "kafka_lake.gold_as_of($seed_snap)" \
	"the SQL gold's as-of function defined at 1.1 refuses a snapshot of another source, naming the one that reads it"
is "$(q -d $db -c "SELECT accepted || ' ' || quarantined FROM kafka_lake.source_status WHERE source = 'orders92'")" "4 0" \
	"source_status counts the re-admitted order once"
is "$(q -d $db -c "SELECT status FROM kafka_lake.claim_landing('orders92')")" "already_ours" \
	"claim_landing() is there, and the landing is this database's"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.2' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"
is "$(q -d $db -c "SELECT md5(pg_get_viewdef('kafka_lake.source_status'))")" \
	"$(q -d ${db}_fresh -c "SELECT md5(pg_get_viewdef('kafka_lake.source_status'))")" "with the same source_status"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" -c "DROP ROLE t92_analyst" >/dev/null
