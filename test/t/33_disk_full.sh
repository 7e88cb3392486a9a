#!/usr/bin/env bash
# test/t/33_disk_full.sh: a full disk is an ERROR with SQLSTATE 53100 and a hint, and
# loses nothing: what landed before stays, nothing is committed past it, and landing goes on once
# there is room.  The land that fills the disk commits a few windows first (small batches), and
# its error says exactly how far it committed.  The landing directory of this test's source is a
# 1 MB tmpfs (skipped where the harness cannot mount one).  Needs the broker.
source "$(dirname "$0")/../lib/tap.sh"
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test "$@"; }

dir=$KL_TMP/full
mkdir -p "$dir"
mount -t tmpfs -o size=1m,mode=0700,uid="$(id -u postgres)" tmpfs "$dir" 2>/dev/null ||
	skip_all "cannot mount a tmpfs here"
trap 'umount "$dir" 2>/dev/null' EXIT
plan 8

q -c "SELECT kl_test.broker('create full.t 1')" -c "SELECT kl_test.server('full_srv')" >/dev/null
q -c "SET kafka_lake.landing_dir = '$dir'" -c "SELECT kafka_lake.create_source('full_src', 'full_srv', 'full.t')" \
	-c "SELECT kafka_lake.set_compression('full_src', 'none')" >/dev/null  # plain JSONL: the disk fills at the size the test counts on
q -c "SELECT kl_test.fill('full.t', 100, 1)" >/dev/null
is "$(q -c "SELECT sum(records) FROM kafka_lake.land('full_src')")" 100 "100 records land on the small disk"

q -c "SELECT kl_test.fill('full.t', 5000, 1, 101)" >/dev/null
err=$(psql -X -A -t -q -d kl_test -v VERBOSITY=verbose -c "SET kafka_lake.batch_max_records = 200" \
	-c "SELECT * FROM kafka_lake.land('full_src')" 2>&1)
ok "grep -q 'ERROR:  53100' <<<\"\$err\"" "landing 5,000 more in windows of 200 fails with SQLSTATE 53100 (disk full)"
committed=$(q -c "SELECT committed_offset FROM kafka_lake.lag('full_src')")
ok "[ '$committed' -gt 100 ]" "(windows before the full disk were committed: offset $committed)"
ok "grep -q '^DETAIL: .*this call committed partition 0 to offset $committed\\b' <<<\"\$err\"" \
	"the error says exactly how far this call committed"
ok "! grep -qi 'nothing was committed' <<<\"\$err\"" "and never that nothing was committed"
[ "$_tap_failed" = 0 ] || diag "$err"
is "$(q -c "SELECT count(*) FROM kafka_lake.verify('full_src') WHERE problem NOT IN ('abandoned_staging', 'not_in_catalog')")" 0 \
	"the batches that landed before are intact"

mount -o remount,size=64m "$dir"
is "$(q -c "SELECT max(committed_offset) FROM kafka_lake.land('full_src')")" 5100 "with room again, the rest lands"
is "$(q -c "SELECT count(*) || ' ' || count(DISTINCT \"offset\") FROM kafka_lake.coordinate_list WHERE source = 'full_src'")" \
	"5100 5100" "every coordinate once"
q -c "SELECT kafka_lake.drop_source('full_src', drop_landing => true)" >/dev/null
