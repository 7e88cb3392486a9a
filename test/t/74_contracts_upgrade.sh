#!/usr/bin/env bash
# test/t/74_contracts_upgrade.sh: contracts in a database created at 1.0.  Before ALTER EXTENSION
# kafka_lake UPDATE, this build lands machine_event_v1 into the 1.0 catalog and knows no other
# contract (a clear error, a hint to update).  The update stores the built-in contracts, pins
# existing sources to machine_event_v1 version 1, records that contract on every batch, gives
# <source>_records its new columns and every source its typed table <source>_events (no member
# of the extension), which reads the same accepted events.  Afterwards a contract can be created,
# a source moved to it, and pg_dump keeps the user-written contracts (not the built-ins).
# Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 13
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
like() { case "$1" in *"$2"*) _tap_result 0 "$3" ;; *) _tap_result 1 "$3"; diag "got: '$1'" "expected to contain: '$2'" ;; esac; }
unlike() { case "$1" in *"$2"*) _tap_result 1 "$3"; diag "got: '$1'" "expected not to contain: '$2'" ;; *) _tap_result 0 "$3" ;; esac; }
db=kl_contracts_upgrade
topic=contracts_upgrade.t

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 200 --partitions 2 \
	--bad-every 40 2>/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.0' CASCADE" >/dev/null 2>&1
q -d $db >/dev/null <<SQL
CREATE SERVER cu_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('cu74_src', 'cu_srv', '$topic');
SELECT count(*) FROM kafka_lake.land('cu74_src');
SQL

err=$(q -d $db -c "SELECT kafka_lake.create_source('cu_other', 'cu_srv', '$topic', contract => 'json_object')" 2>&1)
like "$err" 'unknown contract "json_object"' "before the update, only machine_event_v1 is known"
like "$err" 'ALTER EXTENSION kafka_lake UPDATE' "and the error says what to do"

accepted_before=$(q -d $db -c "SELECT string_agg(partition || ':' || \"offset\" || ':' || event_id, ',' ORDER BY partition, \"offset\")
	FROM kafka_lake.cu74_src_records WHERE status = 'accepted'")
ok "q -d $db -c 'ALTER EXTENSION kafka_lake UPDATE' >/dev/null" "ALTER EXTENSION kafka_lake UPDATE succeeds"

is "$(q -d $db -c "SELECT contract, version, builtin FROM kafka_lake.contracts ORDER BY contract" | tr '\n' ' ')" \
	"json_object|1|t machine_event_v1|1|t raw|1|t " "the update stores the three built-in contracts"
is "$(q -d $db -c "SELECT contract || ' ' || contract_version FROM kafka_lake.sources WHERE source = 'cu74_src'")" \
	"machine_event_v1 1" "an existing source lands with machine_event_v1 version 1"
is "$(q -d $db -c "SELECT count(*) FILTER (WHERE contract = 'machine_event_v1' AND contract_version = 1 AND kind = 'landing') = count(*)
	FROM kafka_lake.batches")" t "every batch landed before records machine_event_v1 version 1"
is "$(q -d $db -c "SELECT string_agg(partition || ':' || \"offset\" || ':' || event_id, ',' ORDER BY partition, \"offset\")
	FROM kafka_lake.cu74_src_events")" "$accepted_before" "the typed table of an existing source reads the same accepted events"
is "$(q -d $db -c "SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	AND objid IN ('kafka_lake.cu74_src_events'::regclass, 'kafka_lake.cu74_src_records'::regclass)")" 0 \
	"like <source>_records, the typed table is no member of the extension"
is "$(q -d $db -c "SELECT DISTINCT contract || ' ' || contract_version FROM kafka_lake.cu74_src_records")" \
	"machine_event_v1 1" "<source>_records shows the contract of each record"
is "$(q -d $db -c "SELECT sum(units_produced) = (SELECT sum((event->>'units_produced')::bigint) FROM kafka_lake.cu74_src_records WHERE status = 'accepted')
	FROM kafka_lake.cu74_src_events")" t "its typed columns read the events' fields"

# after the update: a contract of one's own, a source moved to it
q -d $db >/dev/null <<SQL
SELECT kafka_lake.create_contract('cu_loose', '{"type": "object", "properties": {"event_id": {"type": "string"}}, "required": ["event_id"], "event_id": "event_id"}');
SELECT kafka_lake.alter_source('cu74_src', 'cu_loose');
SQL
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 20 --partitions 2 --start 201 2>/dev/null
is "$(q -d $db -c "SELECT sum(accepted) FROM kafka_lake.land('cu74_src')") $(q -d $db -c "SELECT count(DISTINCT batch_id) FROM kafka_lake.cu74_src_records WHERE contract = 'cu_loose'")" \
	"20 2" "a moved source lands with its new contract"

# pg_dump keeps the contracts an owner wrote, and the built-ins come from the extension
dump=$(pg_dump -d $db 2>/dev/null | sed -n '/^COPY kafka_lake.contracts /,/^\\\./p')
like "$dump" 'cu_loose' "pg_dump keeps the user-written contract"
unlike "$dump" 'machine_event_v1' "and leaves the built-ins to CREATE EXTENSION"

# the landing directory goes too: another test's database may create a source of this name
q -d $db -c "SELECT kafka_lake.drop_source('cu74_src', drop_landing => true)" >/dev/null
q -d postgres -c "DROP DATABASE $db" >/dev/null
