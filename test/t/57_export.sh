#!/usr/bin/env bash
# test/t/57_export.sh: export() writes a bridged date as Parquet, and two independent readers
# (DuckDB's @duckdb/node-api and hyparquet, from test/parquet) read back exactly what
# PostgreSQL holds.  An orders-style source with a column of every kind (text, numeric(12,2),
# numeric without a typmod, bigint, boolean, date, timestamptz, jsonb, smallint, double
# precision, uuid, interval in an SQL gold; NULLs) and the seed source: every relation of the
# date (silver, a declared gold, an SQL gold; silver_machine_events and
# gold_daily_line_metrics) is compared value for value with PostgreSQL's rendering, by both
# readers; DuckDB reads the tree with hive partitioning, and its parquet_metadata() shows ZSTD,
# statistics and field ids.  An export of an unchanged snapshot is a no-op; a correction
# replaces the date's files while a reader that opened the old file keeps reading the old set;
# the per-date JSON names the snapshot and each file's size and SHA-256.  Refusals: no
# export_dir (55000), a relative one or one inside the data directory (22023, at SET), a role
# without EXECUTE or without SELECT on a gold (42501), a date without snapshot (P0002), NULLs
# (22004), a directory the export did not make (55000).  An export in the transaction that
# publishes the snapshot follows its commit: a rollback (or a savepoint rolled back) leaves the
# old export, PREPARE TRANSACTION is refused (0A000).
# Needs the broker, node and test/parquet's packages.
source "$(dirname "$0")/../lib/tap.sh"
plan 52
pq=$(cd "$(dirname "$0")/../parquet" && pwd)
exp=$KL_TMP/export57
rm -rf "$exp" && mkdir -p "$exp" && chown postgres "$exp"
export PGOPTIONS="-c kafka_lake.export_dir=$exp"
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d kl_test -c "$1" 2>&1; }
err() { psql -X -A -t -q -d kl_test -c "\\set VERBOSITY sqlstate" -c "$1" 2>&1 | tr -d '\n' | sed 's/^ERROR: *//'; }
produce() { printf '%s\n' "$@" | kcat -P -b "$KL_BOOTSTRAP" -t ex57.t -p 0; }
source "$pq/lib.sh"
compare() {
	local rel=$1 where=$2 file=$3 what=$4 r out
	for r in duckdb hyparquet; do
		is "$(pq_file_rows $r "$file")" "$(pq_pg_rows "$rel" "$where")" \
			"$what: $r reads the rows PostgreSQL holds"
	done
}

# an orders-style source with a column of every kind
q "SELECT kl_test.broker('create ex57.t 1')" >/dev/null
q "SELECT kl_test.server('ex57_srv')" >/dev/null
q "SELECT kafka_lake.create_contract('ex57', \$\${
  \"type\": \"object\",
  \"properties\": {
    \"order_id\":   {\"type\": \"string\"},
    \"ordered_at\": {\"type\": \"string\", \"format\": \"date-time\"},
    \"due\":        {\"type\": [\"string\", \"null\"], \"format\": \"date\"},
    \"amount\":     {\"type\": \"number\", \"sql_type\": \"numeric(12,2)\"},
    \"weight\":     {\"type\": [\"number\", \"null\"]},
    \"qty\":        {\"type\": \"integer\"},
    \"paid\":       {\"type\": [\"boolean\", \"null\"]},
    \"note\":       {\"type\": [\"string\", \"null\"]},
    \"customer\":   {\"type\": \"object\"}
  },
  \"required\": [\"order_id\", \"ordered_at\", \"amount\", \"qty\", \"customer\"],
  \"event_id\": \"order_id\",
  \"business_date\": {\"field\": \"ordered_at\", \"time_zone\": \"UTC\"},
  \"natural_key\": [\"order_id\"]
}\$\$)" >/dev/null
q "SELECT kafka_lake.create_source('ex57', 'ex57_srv', 'ex57.t', contract => 'ex57')" >/dev/null
q "SELECT kafka_lake.define_gold('ex57', 'ex57_by_paid', grain => ARRAY['paid'],
     metrics => '{\"revenue\": {\"sum\": \"amount\"}, \"orders\": {\"count\": \"*\"}, \"weight\": {\"sum\": \"weight\"},
                  \"avg_qty\": {\"avg\": \"qty\", \"round\": 3}, \"max_qty\": {\"max\": \"qty\"}}')" >/dev/null
q "SELECT kafka_lake.define_gold('ex57', 'ex57_sql', grain => ARRAY['order_id'], sql => \$\$
     SELECT order_id, (qty % 1000)::smallint AS small, amount::float8 / 3 AS third,
            md5(order_id)::uuid AS id, ((qty % 1000) || ' minutes')::interval AS wait,
            ordered_at::timestamp AS local_at, note IS NULL AS no_note
       FROM silver\$\$)" >/dev/null
produce \
	'{"order_id": "o-1", "ordered_at": "2026-07-01T08:00:00.123456Z", "due": "2026-07-10", "amount": 19.99, "weight": 1.5, "qty": 2, "paid": true, "note": "first", "customer": {"id": 7, "name": "Ann"}}' \
	'{"order_id": "o-2", "ordered_at": "2026-07-01T09:30:00Z", "due": null, "amount": 0.5, "weight": null, "qty": -3, "paid": false, "note": null, "customer": {"id": 8, "tags": ["a", "b"]}}' \
	'{"order_id": "o-3", "ordered_at": "2026-07-01T23:59:59.999999Z", "due": "1969-12-31", "amount": 1234567890.12, "weight": 123456789012345678.000001, "qty": 9007199254740993, "paid": null, "note": "ünïcødé \"quoted\"", "customer": {}}' \
	'{"order_id": "o-4", "ordered_at": "2026-07-01T12:00:00Z", "amount": 0, "weight": -0.25, "qty": 0, "paid": true, "note": "", "customer": {"id": 9}}'
q "SELECT count(*) FROM kafka_lake.land('ex57')" >/dev/null
q "SELECT snapshot_status FROM kafka_lake.bridge('ex57', '2026-07-01')" >/dev/null
snap=$(q "SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id) WHERE source = 'ex57' AND is_current")
run=$(q "SELECT run_id FROM kafka_lake.snapshots WHERE snapshot_id = $snap")

out=$(q "SELECT relation || ' ' || rows || ' ' || status FROM kafka_lake.export('ex57', '2026-07-01') ORDER BY relation")
is "$out" "ex57_by_paid 3 exported
ex57_silver 4 exported
ex57_sql 4 exported" "export() writes silver and both golds of the date, one file each"
tree=$exp/ex57
ok "[ -f '$tree/ex57_silver/business_date=2026-07-01/part-00000.parquet' ] && [ -f '$tree/_snapshots/business_date=2026-07-01.json' ]" \
	"in <export_dir>/<source>/<relation>/business_date=<date>/, with the per-date JSON"
compare ex57_silver "run_id = '$run'" "$tree/ex57_silver/business_date=2026-07-01/part-00000.parquet" "silver"
compare ex57_by_paid "snapshot_id = $snap" "$tree/ex57_by_paid/business_date=2026-07-01/part-00000.parquet" "the declared gold"
compare ex57_sql "snapshot_id = $snap" "$tree/ex57_sql/business_date=2026-07-01/part-00000.parquet" "the SQL gold"

# the JSON: the snapshot, and each file's size and SHA-256 as on disk
json=$tree/_snapshots/business_date=2026-07-01.json
is "$(python3 -c "
import json, hashlib, os, sys
d = json.load(open('$json'))
print(d['snapshot_id'], d['source_hash'] == '$(q "SELECT source_hash FROM kafka_lake.snapshots WHERE snapshot_id = $snap")', d['closing_status'])
for f in d['files']:
    p = os.path.join('$tree', f['path'])
    print(f['relation'], os.path.getsize(p) == f['bytes'], hashlib.sha256(open(p, 'rb').read()).hexdigest() == f['sha256'])
")" "$snap True provisional
ex57_silver True True
ex57_by_paid True True
ex57_sql True True" "the per-date JSON names the snapshot, its source_hash and status, and each file's size and SHA-256"

# what DuckDB sees of the files: types, ZSTD, statistics, field ids
meta=$(pq_reader meta "$tree/ex57_silver/business_date=2026-07-01/part-00000.parquet")
is "$(python3 -c "
import json, sys
m = json.loads(sys.stdin.read())
cols = {c['path_in_schema']: c for c in m['metadata']}
print(sorted(set(c['compression'] for c in m['metadata'])))
print(cols['amount']['stats_min_value'], cols['amount']['stats_max_value'], cols['qty']['stats_min_value'], cols['qty']['stats_max_value'])
print(cols['due']['stats_null_count'], cols['order_id']['stats_min_value'], cols['order_id']['stats_max_value'])
s = {e['name']: e for e in m['schema']}
print(s['amount']['logical_type'] is not None, s['amount']['scale'], s['amount']['precision'], s['ordered_at']['logical_type'] is not None)
print(all(e['field_id'] is not None for n, e in s.items() if n not in ('schema', 'duckdb_schema')))
" <<<"$meta")" "['ZSTD']
0.00 1234567890.12 -3 9007199254740993
2 o-1 o-4
True 2 12 True
True" "parquet_metadata(): ZSTD, min/max per column (decimals, integers, strings), null counts; parquet_schema(): DECIMAL(12,2), timestamps, field ids"
is "$(pq_reader sql "SELECT business_date::VARCHAR AS d, count(*)::INTEGER AS n FROM read_parquet('$tree/ex57_silver/*/*.parquet', hive_partitioning = true) GROUP BY ALL")" \
	'["2026-07-01","4"]' "DuckDB reads the tree with hive partitioning"

is "$(q "SELECT string_agg(status, ',') FROM kafka_lake.export('ex57', '2026-07-01')")" "unchanged,unchanged,unchanged" \
	"an export of the snapshot already exported changes nothing"

# an edited JSON (here: a relation that names a path) reads as no export: the date is written again
cp "$json" "$KL_TMP/57.json"
sed -i 's/"relation": "ex57_sql"/"relation": "..\/..\/x"/' "$json"
is "$(q "SELECT string_agg(status, ',') FROM kafka_lake.export('ex57', '2026-07-01')") $(cmp -s "$json" "$KL_TMP/57.json" && echo same)" \
	"exported,exported,exported same" "an edited per-date JSON reads as no export: the date is exported again, the JSON as it was"
# a correction replaces the date's files; a reader that opened the old file reads the old set
old_sha=$(sha256sum "$tree/ex57_silver/business_date=2026-07-01/part-00000.parquet" | cut -d' ' -f1)
exec 7<"$tree/ex57_silver/business_date=2026-07-01/part-00000.parquet"
produce '{"order_id": "o-5", "ordered_at": "2026-07-01T13:00:00Z", "amount": 5, "qty": 1, "customer": {}}'
q "SELECT count(*) FROM kafka_lake.land('ex57')" >/dev/null
q "SELECT snapshot_status FROM kafka_lake.bridge('ex57', '2026-07-01')" >/dev/null
snap2=$(q "SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id) WHERE source = 'ex57' AND is_current")
run2=$(q "SELECT run_id FROM kafka_lake.snapshots WHERE snapshot_id = $snap2")
is "$(q "SELECT string_agg(DISTINCT snapshot_id || ' ' || status, ',') FROM kafka_lake.export('ex57', '2026-07-01')")" "$snap2 exported" \
	"the correction's snapshot is exported"
is "$(sha256sum /dev/fd/7 | cut -d' ' -f1)" "$old_sha" "a reader that opened the old file still reads the old set"
exec 7<&-
compare ex57_silver "run_id = '$run2'" "$tree/ex57_silver/business_date=2026-07-01/part-00000.parquet" "silver of the correction"
is "$(python3 -c "import json; print(json.load(open('$json'))['snapshot_id'])")" "$snap2" "the JSON names the new snapshot"
is "$(find "$tree" -name '*.parquet' | wc -l) $(ls -A "$tree/.staging" | grep -v '^\.kafka_lake_export$' | wc -l)" "3 0" \
	"one file per relation, and nothing left in staging"

# the seed source: silver_machine_events and gold_daily_line_metrics
q "SELECT kl_test.broker('create ex57m.t 2')" >/dev/null
q "SELECT kl_test.fill('ex57m.t', 400, 2, 1, '--date 2026-06-01')" >/dev/null
q "SELECT kafka_lake.create_source('ex57m', 'ex57_srv', 'ex57m.t')" >/dev/null
q "SELECT count(*) FROM kafka_lake.land('ex57m')" >/dev/null
q "SELECT snapshot_status FROM kafka_lake.bridge('ex57m', '2026-06-01')" >/dev/null
msnap=$(q "SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id) WHERE source = 'ex57m' AND is_current")
mrun=$(q "SELECT run_id FROM kafka_lake.snapshots WHERE snapshot_id = $msnap")
is "$(q "SELECT string_agg(relation || ' ' || status, ',' ORDER BY relation) FROM kafka_lake.export('ex57m', '2026-06-01')")" \
	"gold_daily_line_metrics exported,silver_machine_events exported" "the seed source exports its silver and its gold"
compare silver_machine_events "run_id = '$mrun'" "$exp/ex57m/silver_machine_events/business_date=2026-06-01/part-00000.parquet" "the seed's silver"
compare gold_daily_line_metrics "snapshot_id = $msnap" "$exp/ex57m/gold_daily_line_metrics/business_date=2026-06-01/part-00000.parquet" "the seed's gold"

# several row groups: the same rows
q "SELECT count(*) FROM kafka_lake.export('ex57m', '2026-06-01', row_group_rows => 7)" >/dev/null
mfile=$exp/ex57m/silver_machine_events/business_date=2026-06-01/part-00000.parquet
is "$(pq_reader meta "$mfile" | python3 -c "import json,sys; m=json.load(sys.stdin); print(len(set(c['row_group_id'] for c in m['metadata'])) > 1)")" \
	"False" "an unchanged snapshot is not written again, whatever row_group_rows says"
rm -f "$exp/ex57m/_snapshots/business_date=2026-06-01.json"
q "SELECT count(*) FROM kafka_lake.export('ex57m', '2026-06-01', row_group_rows => 7)" >/dev/null
is "$(pq_reader meta "$mfile" | python3 -c "import json,sys; m=json.load(sys.stdin); print(len(set(c['row_group_id'] for c in m['metadata'])))")" \
	"$(( ($(q "SELECT count(*) FROM kafka_lake.silver_machine_events WHERE run_id = '$mrun'") + 6) / 7 ))" \
	"without its JSON the date is exported again, in row groups of row_group_rows"
compare silver_machine_events "run_id = '$mrun'" "$mfile" "the seed's silver in many row groups"

# refusals
is "$(PGOPTIONS= err "SELECT * FROM kafka_lake.export('ex57', '2026-07-01')")" "55000" "no export_dir: 55000"
is "$(err "SET kafka_lake.export_dir = 'relative/dir'")" "22023" "a relative export_dir is refused when set (22023)"
is "$(err "SET kafka_lake.export_dir = '$(q "SHOW data_directory")/lake'")" "22023" "an export_dir inside the data directory is refused (22023)"
is "$(err "SELECT * FROM kafka_lake.export('ex57', '2026-07-02')")" "P0002" "a date without snapshot: P0002"
is "$(err "SELECT * FROM kafka_lake.export('ex57', NULL)")" "22004" "a NULL date: 22004"
is "$(err "SELECT * FROM kafka_lake.export('ex57', 'infinity')")" "22023" "an infinite date: 22023"
q "DROP ROLE IF EXISTS ex57_reader; CREATE ROLE ex57_reader LOGIN" >/dev/null
is "$(err "SET ROLE ex57_reader; SELECT * FROM kafka_lake.export('ex57', '2026-07-01')")" "42501" \
	"a role without EXECUTE: 42501"
q "GRANT USAGE ON SCHEMA kafka_lake TO ex57_reader; GRANT EXECUTE ON FUNCTION kafka_lake.export(text, date, integer) TO ex57_reader;
   GRANT SELECT ON kafka_lake.ex57_silver, kafka_lake.ex57_by_paid TO ex57_reader" >/dev/null
like "$(psql -X -A -t -q -d kl_test -c "SET ROLE ex57_reader" -c "SELECT * FROM kafka_lake.export('ex57', '2026-07-01')" 2>&1)" \
	'may not read kafka_lake.ex57_sql.' "without SELECT on one gold: refused, naming it"
is "$(err "SET ROLE ex57_reader; SELECT * FROM kafka_lake.export('ex57', '2026-07-01')")" "42501" "with 42501"
q "GRANT SELECT ON kafka_lake.ex57_sql TO ex57_reader" >/dev/null
is "$(psql -X -A -t -q -d kl_test -c "SET ROLE ex57_reader" -c "SELECT string_agg(status, ',') FROM kafka_lake.export('ex57', '2026-07-01')" 2>&1)" \
	"unchanged,unchanged,unchanged" "with SELECT on every table it exports, the role may export"
# export() in the transaction that publishes the snapshot: the files follow the commit
jsnap() { python3 -c "import json; print(json.load(open('$json'))['snapshot_id'])"; }
staged() { ls -A "$tree/.staging" | grep -vc '^\.kafka_lake_export$'; }
current() { q "SELECT snapshot_id FROM kafka_lake.snapshots s JOIN kafka_lake.sources USING (source_id) WHERE source = 'ex57' AND is_current"; }
late() {
	produce "{\"order_id\": \"$1\", \"ordered_at\": \"2026-07-01T14:00:00Z\", \"amount\": 6, \"qty\": 1, \"customer\": {}}"
	q "SELECT count(*) FROM kafka_lake.land('ex57')" >/dev/null
}
late o-6
is "$(q "BEGIN; SELECT count(*) FROM kafka_lake.bridge('ex57', '2026-07-01') WHERE snapshot_status = 'published';
         SELECT string_agg(DISTINCT status, ',') FROM kafka_lake.export('ex57', '2026-07-01'); ROLLBACK" | tr '\n' ' ')$(jsnap) $(staged) $(current)" \
	"1 at_commit $snap2 0 $snap2" "a snapshot published in the same transaction is exported at its commit: a rollback leaves the old export, and no staging"
q "BEGIN; SELECT count(*) FROM kafka_lake.bridge('ex57', '2026-07-01'); SAVEPOINT s;
   SELECT count(*) FROM kafka_lake.export('ex57', '2026-07-01'); ROLLBACK TO s; COMMIT" >/dev/null
snap3=$(current)
is "$(jsnap) $(staged)" "$snap2 0" "an export in a savepoint rolled back is discarded (the bridge's snapshot $snap3 committed without it)"
late o-6b
is "$(err "BEGIN; SELECT FROM kafka_lake.bridge('ex57', '2026-07-01'); SELECT FROM kafka_lake.export('ex57', '2026-07-01');
           PREPARE TRANSACTION 'ex57'")$(jsnap) $(staged)" \
	"0A000$snap2 0" "PREPARE TRANSACTION after an export at commit is refused (0A000), and nothing is left"
late o-7
q "BEGIN; SELECT count(*) FROM kafka_lake.bridge('ex57', '2026-07-01');
   SELECT count(*) FROM kafka_lake.export('ex57', '2026-07-01'); COMMIT" >/dev/null
snap4=$(current)
run4=$(q "SELECT run_id FROM kafka_lake.snapshots WHERE snapshot_id = $snap4")
ok "[ $snap4 != $snap3 ] && [ \"\$(jsnap) \$(staged)\" = '$snap4 0' ]" "committed, the transaction's snapshot $snap4 is the export's"
compare ex57_silver "run_id = '$run4'" "$tree/ex57_silver/business_date=2026-07-01/part-00000.parquet" "silver exported at commit"
# bridge(..., export => true) and close_date(..., export => true): the same, in one call
late o-8
q "SELECT run_status FROM kafka_lake.bridge('ex57', '2026-07-01', export => true)" >/dev/null
snap5=$(current)
ok "[ $snap5 != $snap4 ] && [ \"\$(jsnap) \$(staged)\" = '$snap5 0' ]" "bridge(..., export => true) exports the snapshot it publishes, at its commit"
is "$(q "SELECT status || ' ' || snapshot_id FROM kafka_lake.close_date('ex57', '2026-07-01', export => true)")
$(python3 -c "import json; d = json.load(open('$json')); print(d['snapshot_id'], d['closing_status'])")" \
	"closed $(current)
$(current) closed" "close_date(..., export => true) exports the closed snapshot, its JSON saying closed"
compare ex57_by_paid "snapshot_id = $(current)" "$tree/ex57_by_paid/business_date=2026-07-01/part-00000.parquet" "the closed gold"
is "$(PGOPTIONS= err "SELECT FROM kafka_lake.bridge('ex57', '2026-07-01', export => true)")" "55000" \
	"bridge(..., export => true) without export_dir is refused (55000)"
mkdir -p "$exp/ex57x" && echo mine >"$exp/ex57x/notes.txt" && chown -R postgres "$exp/ex57x"
q "SELECT kafka_lake.create_source('ex57x', 'ex57_srv', 'ex57m.t')" >/dev/null
q "SELECT count(*) FROM kafka_lake.land('ex57x')" >/dev/null
q "SELECT snapshot_status FROM kafka_lake.bridge('ex57x', '2026-06-01')" >/dev/null
is "$(err "SELECT * FROM kafka_lake.export('ex57x', '2026-06-01')")" "55000" \
	"a directory of the source's name that the export did not make: 55000"
is "$(cat "$exp/ex57x/notes.txt") $(ls -A "$exp/ex57x" | wc -l)" "mine 1" "and nothing in it was touched"
# a symbolic link in the source's place is not followed
mkdir -p "$KL_TMP/57elsewhere" && chown postgres "$KL_TMP/57elsewhere" && ln -sfn "$KL_TMP/57elsewhere" "$exp/ex57y"
q "SELECT kafka_lake.create_source('ex57y', 'ex57_srv', 'ex57m.t')" >/dev/null
q "SELECT count(*) FROM kafka_lake.land('ex57y')" >/dev/null
q "SELECT snapshot_status FROM kafka_lake.bridge('ex57y', '2026-06-01')" >/dev/null
is "$(err "SELECT * FROM kafka_lake.export('ex57y', '2026-06-01')") $(ls -A "$KL_TMP/57elsewhere" | wc -l)" "55000 0" \
	"a symbolic link where the source's directory would be: 55000, and nothing written where it points"
q "DROP OWNED BY ex57_reader; DROP ROLE ex57_reader" >/dev/null
