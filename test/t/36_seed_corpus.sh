#!/usr/bin/env bash
# test/t/36_seed_corpus.sh: kafka_lake and the seed's pipeline agree record by record on a corpus
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
# dates, and the gold numbers of one.  Needs the broker, kcat and /usr/bin/python3 (3.11).
source "$(dirname "$0")/../lib/tap.sh"
plan 10
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
  -c "SELECT kafka_lake.create_source('seed_corpus', 'seed_srv', '$topic')" >/dev/null
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

q -c "DROP FOREIGN TABLE kl_test.seed_corpus_times" \
  -c "SELECT kafka_lake.drop_source('seed_corpus', drop_landing => true)" -c "DROP SERVER seed_srv CASCADE" >/dev/null
