#!/usr/bin/env bash
# test/t/93_upgrade_1_3.sh: a database created at kafka_lake 1.1 keeps everything it landed,
# defined and bridged through ALTER EXTENSION kafka_lake UPDATE to 1.3 (the default version),
# the scripts of 1.2 and 1.3 in one go.  At 1.1: an orders source, a declared gold and a SQL
# gold of a plain role, a bridged date, an order quarantined by version 1 and re-admitted by
# version 2.  After the update: the records, silver and golds read the same, verify() is
# clean; the golds defined at 1.1 are version 1 of their history and the snapshot published
# at 1.1 says so; the re-admitted order reaches gold once; a wrong order set aside by
# exclude() leaves the next snapshot, a gold defined again makes it with version 2 while the
# earlier snapshots keep theirs; the updated database holds the same extension objects as
# one created at the default version.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 17
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_up13
topic=upgrade13.orders

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_fresh" \
	-c "DROP ROLE IF EXISTS t93_analyst" -c "CREATE ROLE t93_analyst" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.1' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.1 "the extension is created at 1.1"

contract() {
	printf '{"type": "object",
  "properties": {"order_id": {"type": "string"}, "day": {"type": "string", "format": "date"},
                 "country": {"type": "string"}, "amount": {"type": "number", "minimum": 0%s}},
  "required": ["order_id", "day", "country", "amount"], "event_id": "order_id",
  "business_date": {"field": "day"}}' "$1"
}
q -d $db >/dev/null <<SQL
CREATE SERVER up_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_contract('orders93', '$(contract ', "maximum": 100')');
SELECT kafka_lake.create_source('orders93', 'up_srv', '$topic', contract => 'orders93');
SELECT kafka_lake.produce('up_srv', '$topic', convert_to(format(
         '{"order_id": "o-%s", "day": "2026-07-07", "country": "%s", "amount": %s}',
         i, CASE WHEN i % 2 = 0 THEN 'DE' ELSE 'FR' END, i * 30), 'UTF8'))
  FROM generate_series(1, 4) i;
SELECT * FROM kafka_lake.land('orders93');
GRANT USAGE ON SCHEMA kafka_lake TO t93_analyst;
GRANT EXECUTE ON FUNCTION kafka_lake.define_gold(text, text, text[], json, text) TO t93_analyst;
GRANT SELECT, TRIGGER ON kafka_lake.orders93_records TO t93_analyst;
SELECT kafka_lake.define_gold('orders93', 'orders93_by_country', ARRAY['country'],
                              '{"revenue": {"sum": "amount"}, "orders": {"count": "*"}}');
SET ROLE t93_analyst;
SELECT kafka_lake.define_gold('orders93', 'orders93_who', ARRAY[]::text[],
                              sql => 'SELECT count(*) AS n, current_user::text AS who FROM silver');
RESET ROLE;
SELECT * FROM kafka_lake.bridge('orders93', '2026-07-07');
-- the order over 100 is quarantined; version 2 re-admits it
SELECT kafka_lake.create_contract('orders93', '$(contract '')');
SELECT kafka_lake.alter_source('orders93', 'orders93');
SELECT * FROM kafka_lake.readmit('orders93');
SQL
snap=$(q -d $db -c "SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id) WHERE source = 'orders93'")
state() {
	q -d $db -c "SELECT md5(string_agg(r::text, ',' ORDER BY r.\"offset\", r.batch_id)) FROM kafka_lake.orders93_records r" \
	  -c "SELECT md5(string_agg(s::text, ',' ORDER BY s::text)) FROM kafka_lake.orders93_silver s" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.orders93_by_country_as_of($snap) g" \
	  -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.orders93_who_as_of($snap) g" \
	  -c "SELECT string_agg(p.proname || ':' || pg_get_userbyid(p.proowner) || ':' || coalesce(p.proacl::text, '-'), ',' ORDER BY p.proname)
	        FROM pg_proc p WHERE p.pronamespace = 'kafka_lake'::regnamespace AND p.proname LIKE 'orders93%'"
}
before=$(state)
hash_before=$(q -d $db -c "SELECT source_hash FROM kafka_lake.adapter_versions")

ok "q -d $db -c 'ALTER EXTENSION kafka_lake UPDATE' >/dev/null 2>'$KL_TMP/up13.err'" "ALTER EXTENSION kafka_lake UPDATE succeeds"
[ -s "$KL_TMP/up13.err" ] && diag "$(cat "$KL_TMP/up13.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" \
	"$(q -d ${db}_fresh -c "SELECT default_version FROM pg_available_extensions WHERE name = 'kafka_lake'")" \
	"the extension is at the default version"
is "$(state)" "$before" "records, silver and golds read the same; the as-of functions keep their owners and grants"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('orders93')")" 0 "verify() is clean"
is "$(q -d $db -c "SELECT run_status || ' ' || snapshot_status FROM kafka_lake.bridge('orders93', '2026-07-07')")" \
	"processed published" "the date with the re-admitted order bridges after the update"
is "$(q -d $db -c "SELECT string_agg(country || ' ' || orders || ' ' || revenue, ', ' ORDER BY country) FROM kafka_lake.orders93_by_country_current")" \
	"DE 2 180, FR 2 120" "the re-admitted order is in gold once"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.adapter_versions WHERE source_hash = '$hash_before'")" 1 \
	"the adapter version bridged at 1.1 is kept"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('orders93')")" 0 "verify() is clean after the bridge"
is "$(q -d $db -c "SELECT string_agg(gold || ':' || version, ',' ORDER BY gold) FROM kafka_lake.gold_definitions WHERE gold LIKE 'orders93%'")" \
	"orders93_by_country:1,orders93_who:1" "the golds defined at 1.1 are version 1 of their history"
is "$(q -d $db -c "SELECT string_agg(DISTINCT version::text, ',') FROM kafka_lake.snapshot_definitions WHERE snapshot_id = $snap AND kind = 'gold'")" \
	1 "the snapshot published at 1.1 was made by version 1"
q -d $db >/dev/null <<'SQL'
SELECT * FROM kafka_lake.exclude('orders93', event_id => 'o-1', reason => 'a test order');
SELECT kafka_lake.define_gold('orders93', 'orders93_by_country', ARRAY['country'],
                              '{"revenue": {"sum": "amount"}, "orders": {"count": "amount"}}');
SQL
is "$(q -d $db -c "SELECT run_status || ' ' || snapshot_status FROM kafka_lake.bridge('orders93', '2026-07-07')")" \
	"processed published" "after an exclusion and a gold defined again, the date bridges"
is "$(q -d $db -c "SELECT string_agg(country || ' ' || orders || ' ' || revenue, ', ' ORDER BY country) FROM kafka_lake.orders93_by_country_current")" \
	"DE 2 180, FR 1 90" "without the excluded order"
is "$(q -d $db -c "SELECT d.version FROM kafka_lake.snapshot_definitions d JOIN kafka_lake.snapshots s USING (snapshot_id)
	WHERE s.is_current AND d.name = 'orders93_by_country'")" 2 "the new snapshot was made by version 2 of the gold"
is "$(q -d $db -c "SELECT string_agg(country || ' ' || orders, ', ' ORDER BY country) FROM kafka_lake.orders93_by_country_as_of($snap)")" \
	"DE 1, FR 2" "the snapshot of 1.1 still reads as it was"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('orders93')")" 0 "verify() is clean"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" -c "DROP ROLE t93_analyst" >/dev/null
