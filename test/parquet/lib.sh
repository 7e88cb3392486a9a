# test/parquet/lib.sh: what the export tests share (sourced by test/t/57_export.sh and others).
# pq_reader ARGS: read.js with ARGS; pq_file_rows READER FILE: a file's header line, then its rows
# sorted, as READER (duckdb or hyparquet) reads them; pq_pg_rows RELATION WHERE: the same for
# PostgreSQL's rows of kafka_lake.RELATION, rendered as read.js renders Parquet values (strings,
# NULL as null; timestamps in UTC to the microsecond, decimals without trailing zeros) and
# without business_date, which an export keeps in the directory's name.  Needs q() (psql).
pq_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pq_reader() { (cd "$pq_dir" && node read.js "$@"); }
# one JSON array per line, laid out the same way whoever wrote it
pq_compact() { python3 -c 'import json, sys
for l in sys.stdin: print(json.dumps(json.loads(l), separators=(",", ":"), ensure_ascii=False))'; }
pq_file_rows() {
	local out
	out=$(pq_reader rows --reader "$1" "$2" | pq_compact)
	head -1 <<<"$out"
	tail -n +2 <<<"$out" | sort
}
pq_pg_rows() {
	local rel=$1 where=$2
	q "SELECT json_agg(attname::text ORDER BY attnum) FROM pg_attribute
	   WHERE attrelid = 'kafka_lake.$rel'::regclass AND attnum > 0 AND NOT attisdropped AND attname <> 'business_date'" | pq_compact
	q "SELECT (SELECT json_agg(CASE
	            WHEN v IS NULL THEN NULL
	            WHEN t = 'timestamp with time zone' THEN to_json(to_char(v::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))
	            WHEN t = 'timestamp without time zone' THEN to_json(to_char(v::timestamp, 'YYYY-MM-DD\"T\"HH24:MI:SS.US'))
	            WHEN t = 'date' THEN to_json(to_char(v::date, 'YYYY-MM-DD'))
	            WHEN t LIKE 'numeric%' THEN to_json(trim_scale(v::numeric)::text)
	            WHEN t = 'boolean' THEN to_json(v::boolean::text)
	            ELSE to_json(v) END ORDER BY n)
	          FROM (SELECT e.value #>> '{}' AS v, a.attnum AS n, format_type(a.atttypid, a.atttypmod) AS t
	                  FROM jsonb_each(to_jsonb(r)) e
	                  JOIN pg_attribute a ON a.attrelid = 'kafka_lake.$rel'::regclass AND a.attname = e.key
	                 WHERE e.key <> 'business_date') c)
	     FROM kafka_lake.$rel r WHERE $where" | pq_compact | sort
}
