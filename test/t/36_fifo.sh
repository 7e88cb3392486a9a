#!/usr/bin/env bash
# test/t/36_fifo.sh: kafka_lake never opens anything in the landing that is not a regular file,
# and never blocks in open(2).  A FIFO where a landed file, a manifest, a source marker or a
# temporary file of the bridge belongs would block a backend in open(2) for good (signals do
# not interrupt it: pg_cancel_backend and pg_terminate_backend do nothing).  Each case here
# must end at once with an ERROR that names the file, or go on past a FIFO that is no batch.
# A case that blocks is released after a bound by opening the FIFO's other end, and fails.
# Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 9
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1"; }

# bounded FIFO SQL: run SQL (verbose errors) and print what psql printed; if it is still
# blocked after the bound, open the FIFO read-write (which releases a reader or a writer
# blocked in open) and print BLOCKED
bounded() {
	local fifo=$1 out rc
	out=$(timeout 30 psql -X -A -t -q -v VERBOSITY=verbose -d kl_test \
		-c "SET client_min_messages = error" -c "$2" 2>&1)
	rc=$?
	if [ $rc = 124 ]; then
		timeout 10 bash -c "exec 3<>'$fifo'; sleep 0.5" || true
		echo BLOCKED
		return
	fi
	echo "$out"
}
fifo_at() { rm -rf "$1" && mkfifo "$1" && chown postgres: "$1"; }
has() { grep -q -- "$1" <<<"$out"; }

q "SELECT kl_test.broker('create fifo36.t 1')" >/dev/null
q "SELECT kl_test.server('fifo36_kafka')" >/dev/null
q "SELECT kafka_lake.create_source('fifo36', 'fifo36_kafka', 'fifo36.t')" >/dev/null
q "SELECT kafka_lake.set_compression('fifo36', 'none')" >/dev/null  # plain JSONL: the test plants FIFOs by the files' names
q "SELECT kafka_lake.produce('fifo36_kafka', 'fifo36.t', kl_test.event('evt-fifo36-' || n))
   FROM generate_series(1, 6) n" >/dev/null
q "SET kafka_lake.batch_max_records = 3; SELECT count(*) FROM kafka_lake.land('fifo36')" >/dev/null
landing=$(q "SELECT kl_test.landing('fifo36')")
pdir=$landing/topic=fifo36.t/partition=0
b1=$(q "SELECT batch_id FROM kafka_lake.batches WHERE topic = 'fifo36.t' AND first_offset = 0")
b2=$(q "SELECT batch_id FROM kafka_lake.batches WHERE topic = 'fifo36.t' AND first_offset = 3")

# a landed data file is a FIFO: the foreign table, the bridge and verify()
fifo_at "$pdir/batch=$b1/accepted.jsonl"
out=$(bounded "$pdir/batch=$b1/accepted.jsonl" "SELECT count(*) FROM kafka_lake.fifo36_records")
ok "has 'XX001: file accepted.jsonl of batch $b1 of source \"fifo36\" is not a regular file'" \
	"the foreign table refuses a FIFO in place of a landed file at once"
[ "$out" = BLOCKED ] && diag "it blocked in open(2)"
out=$(bounded "$pdir/batch=$b1/accepted.jsonl" "SELECT * FROM kafka_lake.bridge('fifo36', '2026-06-29')")
ok "has 'XX001:'" "so does the bridge"
out=$(bounded "$pdir/batch=$b1/accepted.jsonl" "SELECT problem || ' ' || detail FROM kafka_lake.verify('fifo36')")
ok "has 'not a regular file'" "verify() reports it as not a regular file"

# a manifest is a FIFO: the foreign table checks the manifest before it reads a batch
fifo_at "$pdir/batch=$b2/manifest.json"
out=$(bounded "$pdir/batch=$b2/manifest.json" "SELECT count(*) FROM kafka_lake.fifo36_records WHERE \"offset\" >= 3")
ok "has 'XX001: manifest.json of batch $b2 of source \"fifo36\" is not a regular file'" \
	"the foreign table refuses a FIFO in place of a manifest"
out=$(bounded "$pdir/batch=$b2/manifest.json" "SELECT problem || ' ' || detail FROM kafka_lake.verify('fifo36') WHERE file = 'manifest.json'")
ok "has 'not a regular file'" "verify() too"

# a batch the catalog lacks, whose manifest is a FIFO: land() must not block in recovery
q "DELETE FROM kafka_lake.batches WHERE batch_id = '$b2'" >/dev/null
out=$(bounded "$pdir/batch=$b2/manifest.json" "SELECT count(*) FROM kafka_lake.land('fifo36')")
ok "has 'XX001:.*not a regular file'" "land() refuses to adopt a batch whose manifest is a FIFO"
rm -rf "$pdir/batch=$b1" "$pdir/batch=$b2"
q "DELETE FROM kafka_lake.batches WHERE batch_id = '$b1'" >/dev/null

# a FIFO named like a batch is no batch: land() goes on
fifo_at "$pdir/batch=fifo"
out=$(bounded "$pdir/batch=fifo" "SELECT count(*) FROM kafka_lake.land('fifo36')")
is "$out" 1 "land() goes on past a FIFO named batch=..."
rm -f "$pdir/batch=fifo"

# the bridge's temporary file is a FIFO
q "SELECT kafka_lake.replay('fifo36', 0, 0, 5)" >/dev/null
hash=$(q "SELECT source_hash FROM kafka_lake.bridge('fifo36', '2026-06-29')")
adir=$landing/adapter/business_date=2026-06-29/source_hash=$hash
rm -f "$adir/provenance.json"
fifo_at "$adir/provenance.json.tmp"
out=$(bounded "$adir/provenance.json.tmp" "SELECT adapter_status FROM kafka_lake.bridge('fifo36', '2026-06-29')")
is "$out" reused "the bridge does not block on a FIFO where its temporary file goes"

# the source marker is a FIFO
q "SELECT kafka_lake.drop_source('fifo36')" >/dev/null
fifo_at "$landing/.kafka_lake_source"
out=$(bounded "$landing/.kafka_lake_source" "SELECT kafka_lake.create_source('fifo36', 'fifo36_kafka', 'fifo36.t')")
ok "has 'ERROR:.*\.kafka_lake_source.*is not a regular file'" \
	"create_source refuses a FIFO in place of the source marker at once"
