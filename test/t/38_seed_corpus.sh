#!/usr/bin/env bash
# test/t/38_seed_corpus.sh: kafka_lake and the seed's pipeline agree record by record on a corpus
# of edge cases, judged by Python 3.11's own standard library (the seed's language and rules:
# json.loads, str.strip, str.lower, date/datetime.fromisoformat, csv.writer, round), through
# test/lib/seed_rules.py.  The corpus (about 3,600 records over 12 partitions): field names
# written with JSON escapes; identifiers in many scripts, with every Unicode whitespace character
# and look-alikes around them; final sigma next to every character that is cased or
# case-ignorable; every Unicode scalar value but NUL packed into identifiers; every timestamp
# form datetime.fromisoformat reads and near misses, hand-written and generated; one value for
# each documented difference; and gold groups whose rates and averages are exact ties.  It is
# produced with kcat, landed in one call, and checked: each record's status, each accepted
# event's bytes, each event_time as the foreign table reads it, the canonical CSV bytes of three
# dates, and the gold numbers of one.  Last, a database whose LC_CTYPE is C lands non-ASCII values
# to the same bytes as the test database (C.UTF-8): the result does not depend on the locale.
# Needs the broker, kcat and /usr/bin/python3 (3.11).
source "$(dirname "$0")/../lib/tap.sh"
plan 12
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test "$@"; }
py=/usr/bin/python3
rules=$(cd "$(dirname "$0")/../lib" && pwd)/seed_rules.py
dir=$KL_TMP/seed_corpus
topic=kafka_lake.seed.corpus.v1
mkdir -p "$dir"

# check NAME ARGS...: one TAP line for one check of seed_rules.py, its report as diagnostics
check() {
	local name=$1 out
	shift
	if out=$("$py" "$rules" "$@" 2>&1); then
		_tap_result 0 "$name"
	else
		_tap_result 1 "$name"
	fi
	diag "$out"
}

ok "'$py' -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'" "python3 is 3.11, the seed's language"
n=$("$py" "$rules" corpus "$dir" | tee "$dir/summary")
diag "$(cat "$dir/summary")"
n=${n%% *}

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 12 >/dev/null
for p in $(seq 0 11); do
	kcat -P -b "$KL_BOOTSTRAP" -t "$topic" -p "$p" -K $'\t' -l "$dir/p$p.kv"
done
q -c "SELECT kl_test.server('seed_srv')" \
  -c "SELECT kafka_lake.create_source('seed_corpus', 'seed_srv', '$topic')" \
  -c "SELECT kafka_lake.set_compression('seed_corpus', 'none')" >/dev/null  # plain JSONL: the test reads the files' bytes
is "$(q -c "SELECT sum(records) FROM kafka_lake.land('seed_corpus', timeout => '120 s')")" "$n" \
	"one land() takes all $n records of the corpus"
landing=$(q -c "SELECT kl_test.landing('seed_corpus')")

check "every record is accepted, a duplicate or quarantined as the seed's rules say, except for the documented differences" \
	statuses "$dir" "$landing"
check "every accepted event is landed byte for byte as the seed normalises it (Unicode strip and lower, names unescaped, event_time as written)" \
	events "$dir" "$landing"

# event_time as the foreign table reads it (one parser for the contract, the bridge and the scan)
q >/dev/null <<-SQL
	CREATE FOREIGN TABLE kl_test.seed_corpus_times (event_time timestamptz, "partition" int, "offset" bigint)
	  SERVER seed_srv OPTIONS (source 'seed_corpus', status 'accepted');
SQL
q -F ' ' -c "SELECT \"partition\", \"offset\", (extract(epoch FROM event_time) * 1000000)::bigint
	FROM kl_test.seed_corpus_times" >"$dir/instants"
check "every accepted event_time reads as the instant Python's datetime names" instants "$dir" "$dir/instants"

# the canonical CSV of three dates
for day in 2026-07-03 2026-07-04 2026-08-01; do
	q -c "SELECT source_hash || ' ' || run_status FROM kafka_lake.bridge('seed_corpus', '$day')" >"$dir/bridge.$day" 2>&1
	diag "bridge $day: $(cat "$dir/bridge.$day")" "$(q -c "SELECT string_agg(check_name || ': ' || detail, E'\n')
		FROM kafka_lake.quality_results WHERE NOT passed AND run_id = (SELECT run_id FROM kafka_lake.runs
		  WHERE business_date = '$day' ORDER BY started_at DESC LIMIT 1)")"
	csv=$(dirname "$landing")/$(q -c "SELECT a.path FROM kafka_lake.adapter_versions a JOIN kafka_lake.sources s USING (source_id)
		WHERE s.source = 'seed_corpus' AND a.business_date = '$day'")
	check "$day: the adapter's CSV is the seed's canonical CSV of the date, byte for byte" csv "$dir" "$landing" "$day" "$csv"
done
ok "grep -q ' processed$' '$dir/bridge.2026-08-01'" "2026-08-01 passes its quality checks and publishes gold"
q -F $'\t' -c "SELECT plant_id, line_id, product_code, units_produced, defect_count, defect_rate, avg_cycle_time_ms
	FROM kafka_lake.gold_current WHERE source = 'seed_corpus' AND business_date = '2026-08-01'" >"$dir/gold"
check "2026-08-01: every gold number is the seed's (round(defects / units, 6), round(cycle_sum / events, 2) of binary floating point)" \
	gold "$dir" "$landing" 2026-08-01 "$dir/gold"

# the database's locale plays no part: a database whose LC_CTYPE is C (where lower('Ä') is 'Ä')
# lands non-ASCII values to the same bytes as this one (C.UTF-8, where it is 'ä')
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create kafka_lake.seed.ctype.v1 1 >/dev/null
"$py" - >"$dir/ctype.kv" <<-'PY'
	import json
	for i, s in enumerate(["PLÄNT-A", "İSTANBUL", "ΟΔΟΣ-ΣΑ", "\u00a0Überwerk\u3000", "ＡＢ", "ǅ"]):
	    print("k%d\t%s" % (i, json.dumps({"event_id": "ct-%d" % i, "schema_version": 1,
	        "event_time": "2026-07-03T08:00:00Z", "business_date": "2026-07-03", "plant_id": s,
	        "line_id": s, "work_order_id": "wo", "machine_id": s, "product_code": s,
	        "operation": "Assembly", "units_produced": 1, "defect_count": 0, "cycle_time_ms": 1},
	        ensure_ascii=(i % 2 == 0))))
	PY
kcat -P -b "$KL_BOOTSTRAP" -t kafka_lake.seed.ctype.v1 -p 0 -K $'\t' -l "$dir/ctype.kv"
psql -X -A -t -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS kl_ctype_c" \
	-c "CREATE DATABASE kl_ctype_c TEMPLATE template0 ENCODING 'UTF8' LC_CTYPE 'C' LC_COLLATE 'C'" >/dev/null
c() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_ctype_c "$@"; }
c -c "CREATE EXTENSION kafka_lake CASCADE" \
  -c "CREATE SERVER ct_srv FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP')" \
  -c "SELECT kafka_lake.create_source('seed_ctype_c', 'ct_srv', 'kafka_lake.seed.ctype.v1')" \
  -c "SELECT kafka_lake.set_compression('seed_ctype_c', 'none')" \
  -c "SELECT count(*) FROM kafka_lake.land('seed_ctype_c')" >/dev/null 2>&1
q -c "SELECT kafka_lake.create_source('seed_ctype_u', 'seed_srv', 'kafka_lake.seed.ctype.v1')" \
  -c "SELECT kafka_lake.set_compression('seed_ctype_u', 'none')" \
  -c "SELECT count(*) FROM kafka_lake.land('seed_ctype_u')" >/dev/null
is "$(c -c "SELECT current_setting('lc_ctype') || ' ' || lower('Ä')") / $(q -c "SELECT current_setting('lc_ctype') || ' ' || lower('Ä')")" \
	"C Ä / C.UTF-8 ä" "two databases whose own lower() differs"
accepted() { sed 's/"timestamp_ms": [0-9]*/"timestamp_ms": T/' "$(dirname "$landing")/$1"/topic=*/partition=0/batch=*/accepted.jsonl; }
ok "[ \"\$(accepted seed_ctype_c | wc -l)\" = 6 ] && cmp -s <(accepted seed_ctype_c) <(accepted seed_ctype_u)" \
	"both land the six non-ASCII values to the same bytes: lower-casing does not depend on lc_ctype"
c -c "SELECT kafka_lake.drop_source('seed_ctype_c', drop_landing => true)" >/dev/null
psql -X -q -d postgres -c "DROP DATABASE kl_ctype_c" >/dev/null
q -c "SELECT kafka_lake.drop_source('seed_ctype_u', drop_landing => true)" >/dev/null

q -c "DROP FOREIGN TABLE kl_test.seed_corpus_times" \
  -c "SELECT kafka_lake.drop_source('seed_corpus', drop_landing => true)" -c "DROP SERVER seed_srv CASCADE" >/dev/null
