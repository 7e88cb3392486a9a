#!/usr/bin/env bash
# test/t/104_kept_plans.sh: the catalog statements a landing runs per batch keep their plans for
# the session, and a kept plan follows the catalog it runs on.  In one session: a source lands
# at 1.6 (batches without compression columns), ALTER EXTENSION kafka_lake UPDATE, the source
# lands again (the new columns, a new statement text, the old relations changed under kept
# plans), then DROP EXTENSION and CREATE EXTENSION (every relation a kept plan named is gone and
# made again under a new oid) and a new source lands the same topic.  Nothing fails, every
# record lands exactly once in each source, verify() is clean and the catalog the session wrote
# is the one a fresh session reads.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 6
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
db=kl_kept104
topic=kept104.events

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 4 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
fill() { "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 4 "$@" >/dev/null 2>&1; }
fill --count 400 --start 1 --date 2026-07-01

# one session for all of it: its kept plans outlive each step
out=$(q -d $db 2>"$KL_TMP/kept104.err" <<SQL
SET client_min_messages = warning;
CREATE EXTENSION kafka_lake VERSION '1.6' CASCADE;
CREATE SERVER kept_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
\\o /dev/null
SELECT kafka_lake.create_source('kept_a', 'kept_srv', '$topic');
\\o
SELECT 'first ' || sum(records) FROM kafka_lake.land('kept_a');
\! "$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --partitions 4 --count 200 --start 401 --date 2026-07-01 >/dev/null 2>&1
ALTER EXTENSION kafka_lake UPDATE;
SELECT 'updated ' || extversion FROM pg_extension WHERE extname = 'kafka_lake';
SELECT 'second ' || sum(records) FROM kafka_lake.land('kept_a');
SELECT 'a batches ' || count(*) || ' ' || sum(accepted_count) FROM kafka_lake.batches;
SELECT 'a verify ' || count(*) FROM kafka_lake.verify('kept_a');
DROP EXTENSION kafka_lake CASCADE;
CREATE EXTENSION kafka_lake;
CREATE SERVER kept_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
\\o /dev/null
SELECT kafka_lake.create_source('kept_b', 'kept_srv', '$topic');
\\o
SELECT 'third ' || sum(records) FROM kafka_lake.land('kept_b');
SELECT 'again ' || coalesce(sum(records), 0) FROM kafka_lake.land('kept_b');
SQL
)
rc=$?
is "$rc" 0 "one session lands at 1.6, updates, lands, drops and re-creates the extension and lands again"
[ -s "$KL_TMP/kept104.err" ] && diag "$(cat "$KL_TMP/kept104.err")"
is "$(echo "$out" | grep -E '^(first|second|third|again) ' | tr '\n' ' ')" "first 400 second 200 third 600 again 0 " \
	"each landing takes what is new: 400, then 200 after the update, then all 600 into the re-created source"
is "$(echo "$out" | grep -E '^(updated|a batches|a verify) ' | tr '\n' ' ')" \
	"updated $(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'kafka_lake'") a batches 8 600 a verify 0 " \
	"after the update in the same session the source's 8 batches hold 600 accepted events and verify() is clean"
is "$(q -d $db -c "SELECT count(*) || ' ' || sum(accepted_count) || ' ' || count(DISTINCT partition) FROM kafka_lake.batches")" "4 600 4" \
	"a fresh session reads the re-created catalog the old session wrote: 4 batches, 600 events"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('kept_b')") $(q -d $db -c "SELECT count(*) FROM kafka_lake.accepted_events")" "0 600" \
	"verify() is clean and each of the 600 event_ids is accepted once"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.kept_b_records WHERE status = 'accepted'")" 600 \
	"the foreign table reads the 600 accepted records"
q -d postgres -c "DROP DATABASE $db" >/dev/null
