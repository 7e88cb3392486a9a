#!/usr/bin/env bash
# test/t/32_pg_dump.sh: pg_dump keeps the catalog.  A dump of a database with a landed source,
# restored into a new database, has the same catalog rows and a foreign table that reads the
# same landed records (the files stay where they are).  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 5
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

q -d kl_test -c "SELECT kl_test.broker('create dump.t 2')" -c "SELECT kl_test.fill('dump.t', 1000, 2)" >/dev/null
q -d postgres -c "CREATE DATABASE kl_dump_source" -c "CREATE DATABASE kl_dump_restored" >/dev/null
# a database holding only the extension and the source (helpers and pgTAP stay behind)
q -d kl_dump_source -c "CREATE EXTENSION kafka_lake CASCADE" >/dev/null 2>&1
q -d kl_dump_source -c "CREATE SERVER d_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" \
	-c "SELECT kafka_lake.create_source('d_src2', 'd_srv', 'dump.t')" \
	-c "SELECT count(*) FROM kafka_lake.land('d_src2')" >/dev/null
before=$(q -d kl_dump_source -c "SELECT (SELECT count(*) FROM kafka_lake.batches) || ' ' ||
	(SELECT count(*) FROM kafka_lake.accepted_events) || ' ' || (SELECT count(*) FROM kafka_lake.d_src2_records)")

ok "pg_dump -d kl_dump_source -f '$KL_TMP/dump.sql' 2>'$KL_TMP/dump.err'" "pg_dump dumps a database with a landed source"
ok "grep -q 'COPY kafka_lake.batches' '$KL_TMP/dump.sql' && grep -q 'COPY kafka_lake.accepted_events' '$KL_TMP/dump.sql'" \
	"the dump holds the catalog's rows"
ok "psql -X -q -v ON_ERROR_STOP=1 -d kl_dump_restored -f '$KL_TMP/dump.sql' >/dev/null 2>'$KL_TMP/restore.err'" \
	"the dump restores into a new database"
is "$(q -d kl_dump_restored -c "SELECT (SELECT count(*) FROM kafka_lake.batches) || ' ' ||
	(SELECT count(*) FROM kafka_lake.accepted_events) || ' ' || (SELECT count(*) FROM kafka_lake.d_src2_records)")" \
	"$before" "the restored catalog and foreign table match the original"
is "$(q -d kl_dump_restored -c "SELECT count(*) FROM kafka_lake.verify('d_src2')")" 0 "verify is clean in the restored database"

q -d postgres -c "DROP DATABASE kl_dump_restored" -c "DROP DATABASE kl_dump_source" >/dev/null
