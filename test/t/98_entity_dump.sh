#!/usr/bin/env bash
# test/t/98_entity_dump.sh: pg_dump keeps an entity stream's state.  A source whose
# contract declares its records versions of entities (a key, an order, a deletion) is
# landed and bridged over two dates; its state view kafka_lake.<source>_state, granted to a
# reader, is dumped and restored into a new database: the restored view reads the same
# rows, the reader's grant is kept, and the view still names the key, order and deletion
# it was made for (what the next bridge compares).  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 6
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
topic=entity.dump.t

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_ent98_source" \
	-c "DROP DATABASE IF EXISTS kl_ent98_restored" -c "DROP ROLE IF EXISTS t98_reader" \
	-c "CREATE ROLE t98_reader" \
	-c "CREATE DATABASE kl_ent98_source" -c "CREATE DATABASE kl_ent98_restored" >/dev/null
q -d kl_ent98_source -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
q -d kl_ent98_source >/dev/null <<SQL
CREATE SERVER ent98_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_contract('accounts98', '{
  "type": "object",
  "properties": {"account": {"type": "string"}, "seq": {"type": "integer"},
                 "day": {"type": "string", "format": "date"}, "balance": {"type": "integer"},
                 "closed": {"type": "boolean"}},
  "required": ["account", "seq", "day", "balance", "closed"],
  "event_id": ["account", "seq"], "business_date": {"field": "day"},
  "entity": {"key": ["account"], "order_by": ["seq"], "deleted": {"field": "closed", "equals": true}}}');
SELECT kafka_lake.create_source('ent98_src', 'ent98_srv', '$topic', contract => 'accounts98');
GRANT USAGE ON SCHEMA kafka_lake TO t98_reader;
GRANT SELECT ON kafka_lake.ent98_src_state TO t98_reader;
SELECT kafka_lake.produce('ent98_srv', '$topic', convert_to(v, 'UTF8')) FROM (VALUES
  ('{"account": "a", "seq": 1, "day": "2026-08-01", "balance": 10, "closed": false}'),
  ('{"account": "b", "seq": 1, "day": "2026-08-01", "balance": 20, "closed": false}'),
  ('{"account": "a", "seq": 2, "day": "2026-08-01", "balance": 15, "closed": false}'),
  ('{"account": "c", "seq": 1, "day": "2026-08-01", "balance": 5, "closed": false}'),
  ('{"account": "b", "seq": 2, "day": "2026-08-02", "balance": 0, "closed": true}'),
  ('{"account": "c", "seq": 3, "day": "2026-08-02", "balance": 7, "closed": false}')) AS e(v);
SELECT * FROM kafka_lake.land('ent98_src');
SELECT * FROM kafka_lake.bridge('ent98_src', '2026-08-01');
SELECT * FROM kafka_lake.bridge('ent98_src', '2026-08-02');
SQL
state() {
	q -d "$1" -c "SET ROLE t98_reader" -c "SELECT string_agg(account || '=' || balance || '@' || business_date, ',' ORDER BY account) FROM kafka_lake.ent98_src_state"
}
is "$(state kl_ent98_source)" "a=15@2026-08-01,c=7@2026-08-02" \
	"the state: a's latest balance, b closed, c's of the second day"
ok "pg_dump -d kl_ent98_source -f '$KL_TMP/ent98dump.sql' 2>'$KL_TMP/ent98dump.err'" "pg_dump dumps it"
ok "psql -X -q -v ON_ERROR_STOP=1 -d kl_ent98_restored -f '$KL_TMP/ent98dump.sql' >/dev/null 2>'$KL_TMP/ent98restore.err'" \
	"the dump restores into a new database"
[ -s "$KL_TMP/ent98restore.err" ] && diag "$(cat "$KL_TMP/ent98restore.err")"
is "$(state kl_ent98_restored)" "a=15@2026-08-01,c=7@2026-08-02" \
	"the restored state view reads the same rows, for the reader it was granted to"
is "$(q -d kl_ent98_restored -c "SELECT obj_description('kafka_lake.ent98_src_state'::regclass)" | sed 's/.*(key/(key/')" \
	'(key account; order_by seq; deleted where closed IS DISTINCT FROM '"'"'true'"'"')' \
	"and still names the key, order and deletion it was made for"
is "$(q -d kl_ent98_restored -c "SELECT has_table_privilege('t98_reader', 'kafka_lake.ent98_src_state', 'SELECT')")" "t" \
	"the reader's grant is restored"

q -d postgres -c "DROP DATABASE kl_ent98_restored" -c "DROP DATABASE kl_ent98_source" >/dev/null
q -d postgres -c "DROP ROLE t98_reader" >/dev/null
