#!/usr/bin/env bash
# test/t/85_close_upgrade.sh: closing dates in a database created at kafka_lake 1.0.  At 1.0
# (with this build's library) land() and bridge() work as 1.0 did: no partition_state, no
# closing.  ALTER EXTENSION kafka_lake UPDATE keeps who may execute bridge() (it gains reopen;
# calls with two arguments keep working), the 1.0 snapshot reads 'provisional', and
# close_date() closes the date 1.0 bridged: its gold is published again under 'closed', the
# 1.0 snapshot stays as it was.  source_status covers what 1.0 landed.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 11
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_close_upgrade
topic=close.upgrade.t
role=kl_t85_bridger

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 2 >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 200 --partitions 2 2>/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
	-c "DROP ROLE IF EXISTS $role" -c "CREATE DATABASE $db" -c "CREATE ROLE $role" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.0' CASCADE" >/dev/null 2>&1

q -d $db >/dev/null <<SQL
CREATE SERVER cu_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('cl_src', 'cu_srv', '$topic');
SELECT count(*) FROM kafka_lake.land('cl_src');
GRANT USAGE ON SCHEMA kafka_lake TO $role;
GRANT EXECUTE ON FUNCTION kafka_lake.bridge(text, date) TO $role;
SQL
date=$(q -d $db -c "SELECT business_date FROM kafka_lake.cl_src_records WHERE status = 'accepted' GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")
is "$(q -d $db -c "SET ROLE $role" -c "SELECT run_status || ' ' || snapshot_status FROM kafka_lake.bridge('cl_src', '$date')")" \
	"processed published" "at 1.0, a granted role bridges a date"
is "$(q -d $db -c "SELECT to_regclass('kafka_lake.partition_state') IS NULL")" t \
	"at 1.0, land() with this build needs no partition_state"
snap=$(q -d $db -c "SELECT snapshot_id FROM kafka_lake.snapshots WHERE is_current")
gold_of() { q -d $db -c "SELECT md5(string_agg(g::text, ',' ORDER BY g::text)) FROM kafka_lake.gold_as_of($snap) g"; }
gold10=$(gold_of)

ok "q -d $db -c 'ALTER EXTENSION kafka_lake UPDATE' >/dev/null" "ALTER EXTENSION kafka_lake UPDATE succeeds"
is "$(q -d $db -c "SELECT has_function_privilege('$role', 'kafka_lake.bridge(text, date, boolean, boolean, boolean)', 'EXECUTE'),
	has_function_privilege('public', 'kafka_lake.bridge(text, date, boolean, boolean, boolean)', 'EXECUTE')")" "t|f" \
	"whoever could execute bridge() still can, PUBLIC still cannot"
is "$(q -d $db -c "SET ROLE $role" -c "SELECT run_status FROM kafka_lake.bridge('cl_src', '$date')")" "skipped" \
	"a call with two arguments still works: the date is unchanged"
is "$(q -d $db -c "SELECT closing_status FROM kafka_lake.snapshots") $(q -d $db -c "SELECT DISTINCT closing_status FROM kafka_lake.gold_current")" \
	"provisional provisional" "the 1.0 snapshot and its gold are provisional"

is "$(q -d $db -c "SELECT status || ' ' || (snapshot_id > $snap) FROM kafka_lake.close_date('cl_src', '$date')")" "closed true" \
	"close_date() closes the date 1.0 bridged, as a new snapshot"
is "$(q -d $db -c "SELECT DISTINCT closing_status FROM kafka_lake.gold_current") $(q -d $db -c "SELECT count(*) FROM kafka_lake.runs")" \
	"closed 1" "its gold is closed: the 1.0 run's gold, published again (no new run)"
is "$(gold_of)" "$gold10" "gold_as_of reads the 1.0 snapshot as 1.0 published it"
is "$(q -d $db -c "SELECT count(DISTINCT closing_status) FROM kafka_lake.gold_as_of($snap)")$(q -d $db -c "SELECT closing_status FROM kafka_lake.gold_as_of($snap) LIMIT 1")" \
	"1provisional" "and it stays provisional"
is "$(q -d $db -c "SELECT string_agg(partition || ':' || accepted || ':' || last_status, ' ' ORDER BY partition) FROM kafka_lake.source_status")" \
	"$(q -d $db -c "SELECT string_agg(partition || ':' || n || ':empty', ' ' ORDER BY partition) FROM
		(SELECT partition, count(*) FILTER (WHERE status = 'accepted') AS n FROM kafka_lake.coordinate_list GROUP BY 1) c")" \
	"source_status counts what 1.0 landed, and shows the close's landing"

# the landing directory is the cluster's: leave none behind for later tests' sources
q -d $db -c "SELECT kafka_lake.drop_source('cl_src', drop_landing => true)" >/dev/null
q -d postgres -c "DROP DATABASE $db" -c "DROP ROLE $role" >/dev/null
