#!/usr/bin/env bash
# test/t/91_restore_landing.sh: a database restored from pg_dump never shares, nor loses, a
# landing.  The catalog says where a source's files are and pg_dump keeps it, not the files:
# the restored database points at the original's directories, whose marker names the
# original.  Both procedures of docs/operations.md (moving a database), end to end:
#   A. restored next to the original (a copy): every call that writes or removes a source's
#      files refuses the original's directory (land, compact, recover, bridge: 55000) and
#      nothing there changes; the copy's landing is copied (cp -a) and claimed with
#      claim_landing(source, landing_dir, group_id); then both land, compact and recover on
#      their own, with their own consumer groups, each verify()ing clean and reading all its
#      records, and neither deletes the other's batches.
#   B. restored and renamed into the original's place (the original dropped): the marker names
#      a database that no longer exists; claim_landing(source) marks it, then compact() removes
#      the directories it replaced (no WARNING), recover() has nothing to remove and verify()
#      reports no leftover.
# claim_landing is for superusers only.  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 24
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
qerr() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@" 2>&1 >/dev/null; }
topic=restore.landing.t
orig=kl_rl_orig
copy=kl_rl_copy
moved=kl_rl_moved

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 50 --partitions 1 --start 1 >/dev/null 2>&1
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $orig" \
	-c "DROP DATABASE IF EXISTS $copy" -c "DROP DATABASE IF EXISTS $moved" -c "DROP ROLE IF EXISTS t91_plain" \
	-c "CREATE DATABASE $orig" -c "CREATE DATABASE $copy" -c "CREATE DATABASE $moved" \
	-c "CREATE ROLE t91_plain" >/dev/null
q -d $orig -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
q -d $orig >/dev/null <<SQL
CREATE SERVER rl_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
SELECT kafka_lake.create_source('rl_src', 'rl_srv', '$topic', group_id => 'kl_rl.orig');
SET kafka_lake.batch_max_records = 10;
SELECT * FROM kafka_lake.land('rl_src');
SELECT * FROM kafka_lake.compact('rl_src');
GRANT USAGE ON SCHEMA kafka_lake TO t91_plain;
GRANT EXECUTE ON FUNCTION kafka_lake.claim_landing(text, text, text) TO t91_plain;
SQL
landing=$(q -d $orig -c "SELECT current_setting('data_directory') || '/kafka_lake/rl_src'")
listing() { (cd "$1" && find . -path ./adapter -prune -o -print | sort | md5sum); }
count() { q -d "$1" -c "SELECT count(*) FROM kafka_lake.rl_src_records"; }
removals() { q -d "$1" -c "SELECT count(*) FROM kafka_lake.recover('rl_src') WHERE action IN ('removed_replaced', 'removed_uncommitted', 'forgotten')"; }
is "$(count $orig)" 50 "the original lands 50 records, in batches it compacts"

# A. a copy next to the original
ok "pg_dump -d $orig -f '$KL_TMP/rl_a.sql' 2>/dev/null && psql -X -q -v ON_ERROR_STOP=1 -d $copy -f '$KL_TMP/rl_a.sql' >/dev/null 2>&1" \
	"pg_dump of the original restores into a database next to it"
before=$(listing "$landing")
err=$(qerr -d $copy -c "SELECT * FROM kafka_lake.land('rl_src')")
like "$err" "the landing directory of source \"rl_src\" is not this database's" "the copy's land() refuses the original's landing"
like "$err" "claim_landing('rl_src', landing_dir =>" "and its hint gives the procedure"
ok "! q -d $copy -c \"SELECT * FROM kafka_lake.compact('rl_src', target_records => 1000)\" >/dev/null 2>&1 &&
    ! q -d $copy -c \"SELECT * FROM kafka_lake.recover('rl_src')\" >/dev/null 2>&1 &&
    ! q -d $copy -c \"SELECT * FROM kafka_lake.bridge('rl_src', '2026-06-29')\" >/dev/null 2>&1" \
	"so do its compact(), recover() and bridge()"
is "$(listing "$landing")" "$before" "nothing in the original's landing changed"
like "$(qerr -d $copy -c "SELECT * FROM kafka_lake.claim_landing('rl_src')")" "which still uses it" \
	"the original's directory itself cannot be claimed while the original exists"
mkdir -p "$KL_TMP/rl_copy"
cp -a "$landing" "$KL_TMP/rl_copy/"
chown -R postgres: "$KL_TMP/rl_copy"
like "$(qerr -d $copy -c "SELECT * FROM kafka_lake.claim_landing('rl_src', landing_dir => '$KL_TMP/rl_copy')")" \
	"needs a consumer group of its own" "a copy of it is claimed only with a consumer group of its own"
like "$(qerr -d $copy -c "SET ROLE t91_plain" -c "SELECT * FROM kafka_lake.claim_landing('rl_src', landing_dir => '$KL_TMP/rl_copy', group_id => 'kl_rl.copy')")" \
	"only a superuser may claim a landing" "and by a superuser only"
is "$(q -d $copy -c "SELECT status || ' ' || batches || ' ' || group_id FROM kafka_lake.claim_landing('rl_src',
        landing_dir => '$KL_TMP/rl_copy', group_id => 'kl_rl.copy')")" \
	"claimed $(q -d $copy -c "SELECT count(*) FROM kafka_lake.batches") kl_rl.copy" \
	"the copy claims its copied landing (every batch of its catalog is there) and a group of its own"
is "$(q -d $copy -c "SELECT status FROM kafka_lake.claim_landing('rl_src', landing_dir => '$KL_TMP/rl_copy')")" \
	"already_ours" "claiming it again changes nothing"

"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 10 --partitions 1 --start 51 >/dev/null 2>&1
is "$(q -d $orig -c "SELECT sum(accepted) FROM kafka_lake.land('rl_src')")" 10 "the original lands the 10 new records"
is "$(q -d $copy -c "SELECT sum(accepted) FROM kafka_lake.land('rl_src')")" 10 \
	"the copy lands them too, from where its catalog says it is, with its own group"
q -d $orig -c "SELECT count(*) FROM kafka_lake.compact('rl_src')" >/dev/null
q -d $copy -c "SELECT count(*) FROM kafka_lake.compact('rl_src')" >/dev/null
is "$(removals $orig) $(removals $copy)" "0 0" "after both compact, neither recover() removes or forgets anything"
is "$(count $orig) $(count $copy)" "60 60" "each reads its 60 records"
is "$(q -d $orig -c "SELECT count(*) FROM kafka_lake.verify('rl_src')") $(q -d $copy -c "SELECT count(*) FROM kafka_lake.verify('rl_src')")" \
	"0 0" "and verify()s clean"
is "$(q -d $copy -c "SELECT landing_dir || ' ' || group_id FROM kafka_lake.sources")" "$KL_TMP/rl_copy kl_rl.copy" \
	"the copy's catalog points at its landing and its group"

# B. restored into the original's place
ok "pg_dump -d $orig -f '$KL_TMP/rl_b.sql' 2>/dev/null && psql -X -q -v ON_ERROR_STOP=1 -d $moved -f '$KL_TMP/rl_b.sql' >/dev/null 2>&1" \
	"pg_dump of the original restores into a new database"
q -d postgres -c "DROP DATABASE $orig" -c "ALTER DATABASE $moved RENAME TO $orig" >/dev/null
err=$(qerr -d $orig -c "SELECT * FROM kafka_lake.compact('rl_src')")
like "$err" "a database that no longer exists" "renamed into the original's place, it refuses a landing marked by the dropped database"
like "$err" "SELECT * FROM kafka_lake.claim_landing('rl_src');" "and says how to claim it"
is "$(q -d $orig -c "SELECT status || ' ' || batches FROM kafka_lake.claim_landing('rl_src')")" \
	"claimed $(q -d $orig -c "SELECT count(*) FROM kafka_lake.batches")" \
	"claim_landing(source) marks the landing as this database's"
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$topic" --count 5 --partitions 1 --start 61 >/dev/null 2>&1
q -d $orig -c "SELECT count(*) FROM kafka_lake.land('rl_src')" >/dev/null
out=$(psql -X -A -t -q -d $orig -c "SELECT count(*) FROM kafka_lake.compact('rl_src')" 2>&1)
is "$out" "1" "compact() merges and removes the directories it replaced, without a WARNING"
is "$(removals $orig) $(q -d $orig -c "SELECT count(*) FROM kafka_lake.verify('rl_src')")" "0 0" \
	"recover() has nothing to remove and verify() reports no leftover"
is "$(count $orig)" 65 "and the source reads its 65 records"

q -d postgres -c "DROP DATABASE $orig" -c "DROP DATABASE $copy" -c "DROP ROLE t91_plain" >/dev/null
