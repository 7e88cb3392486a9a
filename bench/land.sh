#!/usr/bin/env bash
# bench/land.sh -- land() throughput against kcat consuming the same topic to a
# file, and against the pipeline a DBA would script instead (kcat to a file,
# then COPY into a table with a primary key on event_id), all measured in the
# same run on the same broker and cluster, and the landing backend's peak
# memory; and land() of the same events encoded as Avro against land() of
# them as JSON.
#
#   bench/land.sh            (env: PGHOST PGPORT PGUSER PGDATABASE
#                             KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR
#                             KL_REGISTRY KL_REGISTRY_DIR KL_REGISTRY_URL, as
#                             set by test/lib/env.sh; bench/run does all of it)
#
# Fills a topic of 100 partitions with 1,000,000 seed-style events (the test
# broker keeps about 5 MiB per partition, see test/broker/README.md), and a
# second topic of as many partitions with the same events as Avro in
# Confluent's wire format (kafka_lake_broker fill --avro-schema-id: the same
# keys, partitions, offsets and record timestamps; the writer schema is the
# "machine event" case of test/fixtures/avro/cases.jsonl, registered under a
# subject of the Schema Registry test peer).  A sanity step reads the first,
# a middle and the last event of both topics with kcat and fails the bench
# unless kafka_lake.avro_decode() of the Avro value (its 5-byte framing
# checked and stripped) has the JSON value's fields, in its order, with its
# values (event_time compared as timestamptz: JSON writes +09:00, Avro's
# timestamp-millis reads back in UTC).  Then, each KL_BENCH_RUNS times
# (default 3) and interleaved:
#   kcat, default settings:  kcat -C -e -o beginning -f '%s\n' > file
#   kcat, tuned queue:       the same with queued.min.messages=2000000,
#                            queued.max.messages.kbytes=1048576 (the best
#                            kcat setting measured on this kind of machine)
#   kafka_lake:              a new source, SELECT ... FROM kafka_lake.land(...)
#                            of all 1,000,000 records in one call, in a
#                            fresh backend (its batches compressed: a new
#                            source's default); then its VmHWM
#   kafka_lake, plain JSONL: the same with set_compression('none'): the
#                            ratio says what the default compression costs
#                            the landing
#   kafka_lake, user contract: the same with a source whose contract is
#                            machine_event_v1's definition created by
#                            create_contract() (a contract like any other an
#                            owner writes, judged by the same engine): the
#                            ratio to the built-in says what a contract of
#                            one's own costs (goal: within 10 %)
#   kafka_lake, entity:      the same with a contract that declares the
#                            events versions of entities (the user contract
#                            with "entity": {"key": ["work_order_id",
#                            "machine_id"], "order_by": ["event_time"]} in
#                            place of its natural key): the ratio to the user
#                            contract says what an entity stream costs the
#                            landing (goal: within 10 %)
#   kafka_lake, Avro:        the same with a source on the Avro topic, through
#                            a server with "schema.registry.url" and an Avro
#                            contract over the subject (create_contract with
#                            "server" and "subject": the schema fetched and
#                            embedded), with machine_event_v1's event_id,
#                            schema_version, business_date field, rule,
#                            normalisations of the strings and natural key;
#                            every record must be accepted.  The ratio
#                            json_land_time / avro_land_time says whether the
#                            smaller, typed encoding lands faster (goal >= 1.0)
#   physical limit:          bench/limit.c, compiled here: one librdkafka
#                            consumer of every partition that writes what the
#                            landing must write at the least (per partition,
#                            batches of kafka_lake.batch_max_records lines in
#                            a staging directory, SHA-256 of the file, file and
#                            directory fsynced, renamed, the parent fsynced),
#                            without PostgreSQL, a contract or a manifest: the
#                            ratio limit_time / land_time says how close land()
#                            comes to what this machine can do (goal >= 0.35)
#   kcat + COPY:             kcat with default settings to a file, then in one
#                            psql session and one transaction
#                              CREATE TEMP TABLE staging (line text) ON COMMIT DROP;
#                              \copy staging FROM file (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')
#                              INSERT INTO events (event_id, payload)
#                                SELECT line::json->>'event_id', line::json FROM staging
#                                ON CONFLICT (event_id) DO NOTHING;
#                            into a new, logged
#                              events (event_id text PRIMARY KEY, payload json NOT NULL)
#                            timed end to end, kcat included
# and prints the CPU, the absolute medians and the ratios baseline_time /
# land_time (> 1 means land is faster; for Avro, the JSON land's time over
# the Avro land's: > 1 means Avro lands faster).  Every land writes, fsyncs and
# commits everything, and kcat only writes its file; that is the comparison
# the first two ratios make.
#
# Why that form of the DBA's pipeline: it is the cheapest script that keeps
# what land() guarantees minus the contract and the durable files, namely
# each event_id accepted once, durably committed.
#   - A staging table and INSERT ... ON CONFLICT DO NOTHING, because Kafka
#     delivers at least once and a script is run again: a plain COPY into the
#     keyed table (with event_id a generated column) stops at the first
#     repeated event_id, so it does not do the job, although it is about
#     3 s faster per 1,000,000 events here (4.8 s against 7.8 s for COPY
#     into staging + INSERT ... ON CONFLICT).  COPY has no ON CONFLICT.
#   - The staging table is temporary (no WAL), the keyed table logged: the
#     accepted events must survive a crash, as a landing does.
#   - payload json, not jsonb: json checks the syntax and keeps the text, as
#     the landed JSONL does; jsonb costs about 2 s more per 1,000,000 events
#     here, which would flatter land().
#   - COPY in CSV with quote and delimiter characters that JSON text never
#     holds: COPY's text format would undo the backslash escapes of JSON
#     strings.  \copy (client side), as a script run by someone without
#     pg_read_server_files would; psql reads the file on the other core.
#   - No partition and offset columns: fewer columns make the baseline
#     faster, so the ratio against it errs on land()'s side.
#   - kcat's default settings, as a script would run it.
# The baseline is kind to itself in one more way: the seed's event_ids are
# ascending within a partition, so the text primary key is filled at about a
# hundred insertion points, where land() keys every event_id by a hash and
# so inserts at random places.
#
# Before each timed PostgreSQL step the cluster checkpoints and the disks are
# synced, so that no step pays for the dirty pages of the one before.
set -euo pipefail

for v in PGHOST PGPORT PGUSER PGDATABASE KL_BOOTSTRAP KL_BROKER KL_BROKER_DIR \
	KL_REGISTRY KL_REGISTRY_DIR KL_REGISTRY_URL; do
	if [ -z "${!v:-}" ]; then
		echo "bench/land.sh: $v is not set (run bench/run, or source test/lib/env.sh and start a cluster, the broker and the registry peer)" >&2
		exit 2
	fi
done

COUNT=${KL_BENCH_COUNT:-1000000}
PARTITIONS=${KL_BENCH_PARTITIONS:-100}
RUNS=${KL_BENCH_RUNS:-3}
TOPIC=bench.land.$(date +%s)
AVRO_TOPIC=$TOPIC.avro
SUBJECT=$AVRO_TOPIC-value
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${KL_BENCH_OUT:-$(mktemp -d /tmp/kl_bench_land.XXXXXX)}
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
log() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
runs() { awk '{printf "%s%.2f", (NR > 1 ? ", " : ""), $1}'; }

cc -O2 -o "$OUT/limit" "$root/bench/limit.c" -lrdkafka -lcrypto
psql -X -q -v ON_ERROR_STOP=1 <<-SQL
	CREATE EXTENSION IF NOT EXISTS kafka_lake CASCADE;
	DROP SERVER IF EXISTS bench_land CASCADE;
	CREATE SERVER bench_land FOREIGN DATA WRAPPER kafka_lake OPTIONS (brokers '$KL_BOOTSTRAP');
	SELECT kafka_lake.create_contract('bench_machine_events', definition)
	  FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
	SELECT kafka_lake.create_contract('bench_machine_entities',
	         regexp_replace(definition::text, '"natural_key": \[[^]]*\]',
	                        '"entity": {"key": ["work_order_id", "machine_id"], "order_by": ["event_time"]}')::json)
	  FROM kafka_lake.contracts WHERE contract = 'machine_event_v1';
SQL
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$TOPIC" "$PARTITIONS"
log "filling $TOPIC with $COUNT events over $PARTITIONS partitions"
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --count "$COUNT" --partitions "$PARTITIONS" 2>/dev/null

# the same events as Avro: the writer schema under a subject of the registry
# peer, a server that names the registry, an Avro contract over the subject
schema=$(python3 -c 'import json, sys
for line in open(sys.argv[1]):
    c = json.loads(line)
    if c["name"] == "machine event":
        print(c["writer"])' "$root/test/fixtures/avro/cases.jsonl")
[ -n "$schema" ] || { echo "no \"machine event\" case in test/fixtures/avro/cases.jsonl" >&2; exit 1; }
answer=$(python3 "$KL_REGISTRY" post --dir "$KL_REGISTRY_DIR" "/subjects/$SUBJECT/versions" \
	"$(printf '%s' "$schema" | python3 -c 'import base64, json, sys; print(base64.b64encode(json.dumps({"schema": sys.stdin.read()}).encode()).decode())')")
schema_id=$(printf '%s' "$answer" | sed -n 's/^200 {"id": *\([0-9][0-9]*\)[,}].*$/\1/p')
[ -n "$schema_id" ] || { echo "registering the schema under $SUBJECT failed: $answer" >&2; exit 1; }
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<-SQL
	DROP SERVER IF EXISTS bench_land_avro CASCADE;
	CREATE SERVER bench_land_avro FOREIGN DATA WRAPPER kafka_lake
	  OPTIONS (brokers '$KL_BOOTSTRAP', "schema.registry.url" '$KL_REGISTRY_URL');
	SELECT kafka_lake.create_contract('bench_machine_events_avro', json_build_object(
	  'format', 'avro', 'server', 'bench_land_avro', 'subject', '$SUBJECT',
	  'event_id', 'event_id', 'schema_version', 'schema_version',
	  'business_date', json_build_object('field', 'business_date'),
	  'rules', json_build_array('defect_count <= units_produced'),
	  'normalize', json_build_object('event_id', json_build_array('trim'),
	    'plant_id', json_build_array('trim', 'lower'), 'line_id', json_build_array('trim', 'lower'),
	    'work_order_id', json_build_array('trim', 'lower'), 'machine_id', json_build_array('trim', 'lower'),
	    'product_code', json_build_array('trim', 'lower'), 'operation', json_build_array('trim', 'lower')),
	  'max_value_bytes', 65536,
	  'natural_key', json_build_array('work_order_id', 'machine_id', 'event_time')));
SQL
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$AVRO_TOPIC" "$PARTITIONS"
log "filling $AVRO_TOPIC with the same $COUNT events as Avro (schema id $schema_id)"
"$KL_BROKER" fill --bootstrap "$KL_BOOTSTRAP" --topic "$AVRO_TOPIC" --count "$COUNT" --partitions "$PARTITIONS" \
	--avro-schema-id "$schema_id" 2>/dev/null

# sanity: event n is at partition (n-1) mod P, offset (n-1) div P of both
# topics, and the Avro value decodes to the JSON value's fields
for n in 1 $(( (COUNT + 1) / 2 )) "$COUNT"; do
	p=$(( (n - 1) % PARTITIONS )); o=$(( (n - 1) / PARTITIONS ))
	json=$(kcat -C -b "$KL_BOOTSTRAP" -t "$TOPIC" -p "$p" -o "$o" -c 1 -e -q -f '%s')
	hex=$(kcat -C -b "$KL_BOOTSTRAP" -t "$AVRO_TOPIC" -p "$p" -o "$o" -c 1 -e -q -f '%s' | od -An -v -tx1 | tr -d ' \n')
	same=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -v json="$json" -v hex="$hex" -v schema="$schema" -v id="$schema_id" <<-'SQL'
		WITH v AS (SELECT decode(:'hex', 'hex') AS b, :'json'::json AS j),
		     d AS (SELECT j, kafka_lake.avro_decode(substr(b, 6), :'schema'::json) AS a,
		                  substr(b, 1, 5) = '\x00'::bytea || int4send(:id) AS framed FROM v)
		SELECT framed
		   AND (SELECT array_agg(k) FROM json_object_keys(j) k) = (SELECT array_agg(k) FROM json_object_keys(a) k)
		   AND (SELECT bool_and(CASE WHEN k = 'event_time' THEN (j->>k)::timestamptz = (a->>k)::timestamptz
		                             ELSE (j->k)::jsonb = (a->k)::jsonb END)
		          FROM json_object_keys(j) k)
		  FROM d
	SQL
	)
	if [ "$same" != t ]; then
		echo "event $n: the Avro record does not decode to the JSON record's fields" >&2
		echo "  JSON: $json" >&2
		echo "  Avro: $hex" >&2
		echo "SELECT kafka_lake.avro_decode(substr(decode(:'hex', 'hex'), 6), :'schema'::json)" |
			psql -X -A -t -q -v hex="$hex" -v schema="$schema" | sed 's/^/  decoded: /' >&2 || true
		exit 1
	fi
done
log "sanity: events 1, $(( (COUNT + 1) / 2 )) and $COUNT of $AVRO_TOPIC decode to the fields of $TOPIC's"

# land_contract source contract file what [compression]: land every event into a new source of
# that contract, in a fresh backend; its time appended to file; the source dropped
land_contract() {
	local src=$1 contract=$2 file=$3 what=$4 compression=${5:-} landed t0 t1
	psql -X -q -v ON_ERROR_STOP=1 -c "SELECT kafka_lake.create_source('$src', 'bench_land', '$TOPIC', contract => '$contract')" >/dev/null
	[ -z "$compression" ] ||
		psql -X -q -v ON_ERROR_STOP=1 -c "SELECT kafka_lake.set_compression('$src', '$compression')" >/dev/null
	psql -X -q -c CHECKPOINT
	sync
	t0=$(now)
	landed=$(psql -X -A -t -q -v ON_ERROR_STOP=1 \
		-c "SELECT sum(records) FROM kafka_lake.land('$src', max_records => $COUNT, timeout => '600 s')")
	t1=$(now)
	[ "$landed" = "$COUNT" ] || { echo "land ($what) landed $landed records, expected $COUNT" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$file"
	psql -X -q -c "SELECT kafka_lake.drop_source('$src', drop_landing => true)" \
		-c "VACUUM kafka_lake.accepted_events" >/dev/null
}

: >"$OUT/kcat_default" ; : >"$OUT/kcat_tuned" ; : >"$OUT/land" ; : >"$OUT/hwm" ; : >"$OUT/land_user" ; : >"$OUT/land_plain"
: >"$OUT/land_avro" ; : >"$OUT/hwm_avro" ; : >"$OUT/land_entity" ; : >"$OUT/limit_time"
: >"$OUT/dba" ; : >"$OUT/dba_kcat" ; : >"$OUT/dba_copy" ; : >"$OUT/dba_insert"
for run in $(seq "$RUNS"); do
	t0=$(now)
	kcat -C -b "$KL_BOOTSTRAP" -t "$TOPIC" -e -q -o beginning -f '%s\n' >"$OUT/kcat.out"
	t1=$(now)
	n=$(wc -l <"$OUT/kcat.out")
	[ "$n" = "$COUNT" ] || { echo "kcat read $n records, expected $COUNT" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$OUT/kcat_default"

	t0=$(now)
	kcat -C -b "$KL_BOOTSTRAP" -t "$TOPIC" -e -q -o beginning -f '%s\n' \
		-X queued.min.messages=2000000 -X queued.max.messages.kbytes=1048576 >"$OUT/kcat.out"
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$OUT/kcat_tuned"
	rm -f "$OUT/kcat.out"

	src=bench_land_$run
	psql -X -q -v ON_ERROR_STOP=1 -c "SELECT kafka_lake.create_source('$src', 'bench_land', '$TOPIC')" >/dev/null
	psql -X -q -c CHECKPOINT
	sync
	t0=$(now)
	landed=$(psql -X -A -t -q -v ON_ERROR_STOP=1 \
		-c "SELECT sum(records) FROM kafka_lake.land('$src', max_records => $COUNT, timeout => '600 s')" \
		-c "SELECT regexp_replace(pg_read_file('/proc/self/status'), '.*VmHWM:\s+(\d+) kB.*', '\1', 's')")
	t1=$(now)
	set -- $landed
	[ "$1" = "$COUNT" ] || { echo "land landed $1 records, expected $COUNT" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$OUT/land"
	echo "$2" >>"$OUT/hwm"
	hwm_run=$2
	# each run starts from an empty accepted_events, as the first landing of a source would
	psql -X -q -c "SELECT kafka_lake.drop_source('$src', drop_landing => true)" \
		-c "VACUUM kafka_lake.accepted_events" >/dev/null

	# the same source writing plain JSONL (compression 'none') instead of the default zstd
	land_contract "bench_land_plain_$run" machine_event_v1 "$OUT/land_plain" "plain JSONL" none
	# the same events under a user-written copy of machine_event_v1, and as versions of entities
	land_contract "bench_land_user_$run" bench_machine_events "$OUT/land_user" "user contract"
	land_contract "bench_land_entity_$run" bench_machine_entities "$OUT/land_entity" "entity contract"

	# the same events as Avro, through the registry subject's contract
	src=bench_land_avro_$run
	psql -X -q -v ON_ERROR_STOP=1 -c "SELECT kafka_lake.create_source('$src', 'bench_land_avro', '$AVRO_TOPIC', contract => 'bench_machine_events_avro')" >/dev/null
	psql -X -q -c CHECKPOINT
	sync
	t0=$(now)
	landed=$(psql -X -A -t -q -v ON_ERROR_STOP=1 \
		-c "SELECT sum(records) || ' ' || sum(accepted) FROM kafka_lake.land('$src', max_records => $COUNT, timeout => '600 s')" \
		-c "SELECT regexp_replace(pg_read_file('/proc/self/status'), '.*VmHWM:\s+(\d+) kB.*', '\1', 's')")
	t1=$(now)
	set -- $landed
	[ "$1" = "$COUNT" ] && [ "$2" = "$COUNT" ] ||
		{ echo "land (Avro) landed $1 records and accepted $2, expected $COUNT" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$OUT/land_avro"
	echo "$3" >>"$OUT/hwm_avro"
	hwm_avro_run=$3
	psql -X -q -c "SELECT kafka_lake.drop_source('$src', drop_landing => true)" \
		-c "VACUUM kafka_lake.accepted_events" >/dev/null

	# the physical limit: the least a durable landing writes, without PostgreSQL
	rm -rf "$OUT/limit.out"
	sync
	t0=$(now)
	set -- $("$OUT/limit" --bootstrap "$KL_BOOTSTRAP" --topic "$TOPIC" --out "$OUT/limit.out" \
		--batch "$(psql -X -A -t -q -c "LOAD 'kafka_lake'" -c "SHOW kafka_lake.batch_max_records")")
	t1=$(now)
	[ "$1" = "$COUNT" ] || { echo "bench/limit.c wrote $1 records, expected $COUNT" >&2; exit 1; }
	echo "$t1 - $t0" | bc >>"$OUT/limit_time"
	rm -rf "$OUT/limit.out"

	# the DBA's pipeline, into a new table, as the first load would be
	psql -X -q -v ON_ERROR_STOP=1 \
		-c "DROP TABLE IF EXISTS bench_land_events" \
		-c "CREATE TABLE bench_land_events (event_id text PRIMARY KEY, payload json NOT NULL)" \
		-c CHECKPOINT
	sync
	t0=$(now)
	kcat -C -b "$KL_BOOTSTRAP" -t "$TOPIC" -e -q -o beginning -f '%s\n' >"$OUT/dba.jsonl"
	t1=$(now)
	timings=$(psql -X -A -t -q -v ON_ERROR_STOP=1 <<-SQL
		BEGIN;
		CREATE TEMP TABLE staging (line text) ON COMMIT DROP;
		SELECT 'copy', clock_timestamp();
		\copy staging (line) FROM '$OUT/dba.jsonl' WITH (FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02')
		SELECT 'insert', clock_timestamp();
		INSERT INTO bench_land_events (event_id, payload)
			SELECT line::json->>'event_id', line::json FROM staging
			ON CONFLICT (event_id) DO NOTHING;
		SELECT 'commit', clock_timestamp();
		COMMIT;
	SQL
	)
	t2=$(now)
	n=$(psql -X -A -t -q -c "SELECT count(*) FROM bench_land_events")
	[ "$n" = "$COUNT" ] || { echo "kcat + COPY kept $n events, expected $COUNT" >&2; exit 1; }
	psql -X -q -c "DROP TABLE bench_land_events" -c CHECKPOINT
	rm -f "$OUT/dba.jsonl"
	# the split, from the session's clock: kcat | COPY | INSERT ... ON CONFLICT and COMMIT
	tc=$(echo "$timings" | awk -F'|' '$1 == "copy" {print $2}')
	ti=$(echo "$timings" | awk -F'|' '$1 == "insert" {print $2}')
	echo "$t2 - $t0" | bc >>"$OUT/dba"
	echo "$t1 - $t0" | bc >>"$OUT/dba_kcat"
	psql -X -A -t -q -c "SELECT extract(epoch FROM '$ti'::timestamptz - '$tc'::timestamptz)" >>"$OUT/dba_copy"
	echo "$(tail -1 "$OUT/dba") - $(tail -1 "$OUT/dba_kcat") - $(tail -1 "$OUT/dba_copy")" | bc >>"$OUT/dba_insert"

	log "run $run: kcat $(tail -1 "$OUT/kcat_default") s, kcat tuned $(tail -1 "$OUT/kcat_tuned") s, land $(tail -1 "$OUT/land") s, plain JSONL $(tail -1 "$OUT/land_plain") s, land with a user contract $(tail -1 "$OUT/land_user") s, land with an entity contract $(tail -1 "$OUT/land_entity") s, land of Avro $(tail -1 "$OUT/land_avro") s, physical limit $(tail -1 "$OUT/limit_time") s, peak backend memory $(( hwm_run / 1024 )) MiB (Avro $(( hwm_avro_run / 1024 )) MiB), kcat + COPY $(tail -1 "$OUT/dba") s"
done

kd=$(median <"$OUT/kcat_default"); kt=$(median <"$OUT/kcat_tuned"); ld=$(median <"$OUT/land")
lu=$(median <"$OUT/land_user"); la=$(median <"$OUT/land_avro"); le=$(median <"$OUT/land_entity")
lp=$(median <"$OUT/land_plain")
lim=$(median <"$OUT/limit_time")
db=$(median <"$OUT/dba"); dbk=$(median <"$OUT/dba_kcat"); dbc=$(median <"$OUT/dba_copy"); dbi=$(median <"$OUT/dba_insert")
hwm=$(sort -g "$OUT/hwm" | tail -1); hwma=$(sort -g "$OUT/hwm_avro" | tail -1)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cpuid=$(awk -F': ' '$1 ~ /^cpu family/ {f=$2} $1 ~ /^model[[:space:]]*$/ {m=$2} END {if (f != "") printf "family %s model %s", f, m}' /proc/cpuinfo)
printf '\nland() of %d records over %d partitions (median of %d runs, same broker, same run)\n' "$COUNT" "$PARTITIONS" "$RUNS"
printf '  machine                            %s (%s), %d cores\n' "${cpu:-unknown CPU}" "$cpuid" "$(nproc)"
printf '  kcat to a file, default settings   %8.3f s\n' "$kd"
printf '  kcat to a file, tuned queue        %8.3f s\n' "$kt"
printf '  physical limit (bench/limit.c)     %8.3f s   (librdkafka to fsynced, renamed batch directories; runs %s s)\n' \
	"$lim" "$(runs <"$OUT/limit_time")"
printf '  kcat + COPY + INSERT ON CONFLICT   %8.3f s   (medians: kcat %.3f s, COPY into staging %.3f s, INSERT and COMMIT %.3f s)\n' \
	"$db" "$dbk" "$dbc" "$dbi"
printf '  kafka_lake.land()                  %8.3f s   (%.0f records/s)\n' "$ld" "$(echo "$COUNT / $ld" | bc -l)"
printf '  land(), plain JSONL                %8.3f s   (the same source with set_compression('"'"'none'"'"'))\n' "$lp"
printf '  land(), a user-written contract    %8.3f s   (machine_event_v1'"'"'s definition through create_contract)\n' "$lu"
printf '  land(), an entity contract         %8.3f s   (the user contract, its events versions of (work order, machine))\n' "$le"
printf '  land(), the same events as Avro    %8.3f s   (%.0f records/s; Confluent framing, a contract over a registry subject; runs %s s)\n' \
	"$la" "$(echo "$COUNT / $la" | bc -l)" "$(runs <"$OUT/land_avro")"
printf '  ratio kcat default / land          %8.2f\n' "$(echo "$kd / $ld" | bc -l)"
printf '  ratio kcat tuned / land            %8.2f\n' "$(echo "$kt / $ld" | bc -l)"
printf '  ratio physical limit / land        %8.2f   (goal >= 0.35)\n' "$(echo "$lim / $ld" | bc -l)"
printf '  ratio kcat + COPY / land           %8.2f\n' "$(echo "$db / $ld" | bc -l)"
printf '  ratio zstd / plain JSONL           %8.2f   (the cost of the default compression; run by run %s)\n' \
	"$(echo "$ld / $lp" | bc -l)" "$(paste "$OUT/land" "$OUT/land_plain" | awk '{print $1 / $2}' | runs)"
printf '  ratio user contract / built-in     %8.2f   (goal <= 1.10)\n' "$(echo "$lu / $ld" | bc -l)"
printf '  ratio entity / user contract       %8.2f   (goal <= 1.10)\n' "$(echo "$le / $lu" | bc -l)"
printf '  ratio land JSON / land Avro        %8.2f   (goal >= 1.0; > 1: Avro lands faster; run by run %s)\n' \
	"$(echo "$ld / $la" | bc -l)" "$(paste "$OUT/land" "$OUT/land_avro" | awk '{print $1 / $2}' | runs)"
printf '  peak backend memory (VmHWM)        %8d MiB  (Avro %d MiB; kafka_lake.batch_max_bytes %s)\n' $(( hwm / 1024 )) \
	$(( hwma / 1024 )) "$(psql -X -A -t -q -c "LOAD 'kafka_lake'" -c "SHOW kafka_lake.batch_max_bytes" 2>/dev/null)"
[ -z "${KL_BENCH_OUT:-}" ] && rm -rf "$OUT"
exit 0
