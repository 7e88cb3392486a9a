#!/usr/bin/env bash
# test/t/39_contract_golden.sh: the contract machine_event_v1 lands a fixed corpus byte for byte
# as it always has.  test/fixtures/contract_golden/values.b64 holds 3,031 values (valid events,
# events with one to four violations at once, broken JSON, events sent twice; members in random
# order); expected.tsv what kafka_lake landed for each: its status, and the normalised event's
# exact bytes or the validation_error (the first violation found, in the contract's fixed
# order).  The corpus is produced in order to one partition, landed in one call, and every
# coordinate compared.  Needs the broker and kcat.
source "$(dirname "$0")/../lib/tap.sh"
plan 3
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test "$@"; }
fixtures=$(cd "$(dirname "$0")/../fixtures/contract_golden" && pwd)
lib=$(cd "$(dirname "$0")/../lib" && pwd)
work=$KL_TMP/contract_golden
topic=kafka_lake.contract.golden
mkdir -p "$work"

python3 -c "
import base64, sys
with open(sys.argv[1]) as f, open(sys.argv[2], 'wb') as o:
    for line in f:
        o.write(base64.b64decode(line.strip()) + b'\n')
" "$fixtures/values.b64" "$work/values.raw"
n=$(wc -l <"$fixtures/values.b64")
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
kcat -P -b "$KL_BOOTSTRAP" -t "$topic" -p 0 -l "$work/values.raw"
q -c "SELECT kl_test.server('golden_srv')" \
  -c "SELECT kafka_lake.create_source('golden', 'golden_srv', '$topic')" \
  -c "SELECT kafka_lake.set_compression('golden', 'none')" >/dev/null  # plain JSONL: the test reads the files' bytes
is "$(q -c "SELECT sum(records) FROM kafka_lake.land('golden', timeout => '60 s')")" "$n" \
	"one land() takes all $n values of the corpus"

landing=$(q -c "SELECT kl_test.landing('golden')")
python3 "$lib/landed_events.py" "$landing" >"$work/landed.tsv"
diff "$fixtures/expected.tsv" "$work/landed.tsv" >"$work/diff" && same=yes || same=no
is "$same" yes "every value lands with the same status and the same bytes (event or validation_error)"
[ "$same" = yes ] || diag "$(head -20 "$work/diff")"
is "$(q -c "SELECT string_agg(status || '=' || n, ' ' ORDER BY status) FROM
	(SELECT status, count(*) AS n FROM kafka_lake.golden_records GROUP BY status) s")" \
	"$(cut -f2 "$fixtures/expected.tsv" | sort | uniq -c | awk '{printf "%s%s=%s", (NR > 1 ? " " : ""), $2, $1}')" \
	"the foreign table counts the same statuses"
