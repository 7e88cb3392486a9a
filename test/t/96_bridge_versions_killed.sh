#!/usr/bin/env bash
# test/t/96_bridge_versions_killed.sh: a topic's life through to gold, with a backend killed with
# SIGKILL at each step.  An orders date holds a version-1 order, a version-2 order with a new
# field, and an order version 1 quarantined that version 2 re-admits.  readmit() is killed after
# its unit's directory was renamed into place (recover() adopts the unit); the bridge of the
# date is killed while it loads silver (after it altered silver for the new field) and before
# it publishes gold.  PostgreSQL restarts every backend after such a crash, so this runs from
# the shell; the fault injection point pause:<step> holds the backend there until it is killed.
# After each crash nothing is half done: silver has the columns it had, no run or snapshot is
# left, verify() is clean; the next bridge publishes the date with each order counted once.
# Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 18
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }
contract() {
	printf '{"type": "object",
  "properties": {"order_id": {"type": "string"}, "day": {"type": "string", "format": "date"},
                 "country": {"type": "string"}, "qty": {"type": "integer", "minimum": 0%s}%s},
  "required": ["order_id", "day", "country", "qty"], "event_id": "order_id",
  "business_date": {"field": "day"}, "natural_key": ["order_id"]}' "$1" "$2"
}
produce() {
	q "SELECT kafka_lake.produce('kv96_srv', 'kv96.orders', convert_to('$1', 'UTF8'))" >/dev/null
}
# kill the backend that waits at a fault point while running $2
kill_at() {
	local step=$1 sql=$2 pid=
	psql -X -q -d kl_test -c "SET kafka_lake.fault_injection = 'pause:$step'" -c "$sql" >/dev/null 2>&1 &
	local client=$!
	for _ in $(seq 300); do
		pid=$(q "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Extension'
		         AND query LIKE '%kv96%' AND pid <> pg_backend_pid()")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	ok "[ -n '$pid' ] && kill -9 $pid" "$step: the backend ($pid) is killed with SIGKILL there"
	wait $client 2>/dev/null
	for _ in $(seq 150); do pg_isready -q && q "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
}
silver() {
	q "SELECT string_agg(attname::text, ',' ORDER BY attnum) FROM pg_attribute
	   WHERE attrelid = 'kafka_lake.kv96_silver'::regclass AND attnum > 0 AND NOT attisdropped"
}
runs() {
	q "SELECT count(*) || ' ' || (SELECT count(*) FROM kafka_lake.snapshots JOIN kafka_lake.sources USING (source_id) WHERE source = 'kv96')
	   FROM kafka_lake.runs JOIN kafka_lake.sources USING (source_id) WHERE source = 'kv96'"
}

q "SELECT kl_test.broker('create kv96.orders 1')" >/dev/null
q "SELECT kl_test.server('kv96_srv')" >/dev/null
q "SELECT kafka_lake.create_contract('kv96', '$(contract ', "maximum": 10' '')')" >/dev/null
q "SELECT kafka_lake.create_source('kv96', 'kv96_srv', 'kv96.orders', contract => 'kv96')" >/dev/null
q "SELECT kafka_lake.define_gold('kv96', 'kv96_by_country', ARRAY['country'], '{\"qty\": {\"sum\": \"qty\"}, \"orders\": {\"count\": \"*\"}}')" >/dev/null
produce '{"order_id": "o-1", "day": "2026-09-01", "country": "DE", "qty": 1}'
produce '{"order_id": "o-2", "day": "2026-09-01", "country": "DE", "qty": 20}'
q "SELECT count(*) FROM kafka_lake.land('kv96')" >/dev/null
is "$(q "SELECT run_status FROM kafka_lake.bridge('kv96', '2026-09-01')")" processed "version 1: the date bridges"

q "SELECT kafka_lake.create_contract('kv96', '$(contract '' ', "note": {"type": "string"}')')" >/dev/null
q "SELECT kafka_lake.alter_source('kv96', 'kv96')" >/dev/null
produce '{"order_id": "o-3", "day": "2026-09-01", "country": "FR", "qty": 3, "note": "gift"}'
q "SELECT count(*) FROM kafka_lake.land('kv96')" >/dev/null

# readmit, killed with its unit in place but not committed
kill_at after_rename "SELECT * FROM kafka_lake.readmit('kv96')"
ok "q 'SELECT 1' >/dev/null" "after_rename: PostgreSQL is back after the crash"
q "SELECT count(*) FROM kafka_lake.recover('kv96')" >/dev/null
is "$(q "SELECT count(*) FROM kafka_lake.batches JOIN kafka_lake.sources USING (source_id) WHERE source = 'kv96' AND kind = 'readmit'")" 1 \
	"recover() adopts the unit the killed readmit() left"
is "$(q "SELECT count(*) FROM kafka_lake.readmit('kv96')")" 0 "readmit() again finds nothing left to re-admit"
is "$(q "SELECT count(*) FROM kafka_lake.verify('kv96')")" 0 "verify() is clean"

columns=$(silver)
before=$(runs)
for step in silver_while_reading_ahead bridge_before_gold; do
	kill_at $step "SELECT * FROM kafka_lake.bridge('kv96', '2026-09-01')"
	ok "q 'SELECT 1' >/dev/null" "$step: PostgreSQL is back after the crash"
	is "$(silver)" "$columns" "$step: silver has the columns it had (its ALTER rolled back)"
	is "$(runs)" "$before" "$step: no run or snapshot is left"
	is "$(q "SELECT count(*) FROM kafka_lake.verify('kv96')")" 0 "$step: verify() is clean"
done

is "$(q "SELECT run_status || ' ' || snapshot_status FROM kafka_lake.bridge('kv96', '2026-09-01')")" "processed published" \
	"the date of two versions and a re-admitted order bridges"
is "$(q "SELECT string_agg(country || ' ' || qty || ' ' || orders, ', ' ORDER BY country) FROM kafka_lake.kv96_by_country_current")" \
	"DE 21 2, FR 3 1" "each order counted once"
