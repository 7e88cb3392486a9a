#!/usr/bin/env bash
# test/t/97_upgrade_1_4.sh: a database created at kafka_lake 1.3 with an Avro topic keeps
# its schema catalog through ALTER EXTENSION kafka_lake UPDATE TO '1.4', and pg_dump keeps
# it after.  At 1.3: a contract over a subject of the registry peer, three records landed
# (one refused by a rule), and the same schema id fetched through a second server of the
# same registry URL (the 1.3 library kept it twice, once per server).  After the update:
# kafka_lake.schemas has one row per registry URL and id (the first fetched) and a guid
# column; the records read the same and verify() is clean; with the registry down a new
# contract version is made from the catalog, readmit() decodes the refused record, a new
# record of a known id lands, and the date bridges; the database holds the same extension
# objects as one created at 1.4; a dump restores the schema catalog as it was.  Needs the
# broker and the registry peer.
source "$(dirname "$0")/../lib/tap.sh"
plan 12
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
ctl() { python3 "$KL_REGISTRY" ctl --dir "$KL_REGISTRY_DIR" "$1" >/dev/null; }
db=kl_up14
topic=upgrade14.orders
fixtures=$(cd "$(dirname "$0")/../fixtures/avro" && pwd)/orders.jsonl

# the writers' schemas, registered as a client does
register() {
	local body
	body=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["writer"] == sys.argv[2]:
        print(json.dumps({"schema": json.dumps(d["schema"])})); break' "$fixtures" "$1" | base64 -w0)
	python3 "$KL_REGISTRY" post --dir "$KL_REGISTRY_DIR" "/subjects/upgrade14-value/versions" "$body" |
		sed -n 's/^200 .*"id": *\([0-9]*\).*/\1/p'
}
ctl '{"mode": "ok", "auth": null, "delay_ms": 0}'
id1=$(register v1)
id2=$(register v2)
ok "[ -n '$id1' ] && [ -n '$id2' ] && [ '$id1' != '$id2' ]" "the registry peer has the two writers ($id1, $id2)"

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
	-c "DROP DATABASE IF EXISTS ${db}_fresh" -c "DROP DATABASE IF EXISTS ${db}_restored" \
	-c "CREATE DATABASE $db" -c "CREATE DATABASE ${db}_fresh" -c "CREATE DATABASE ${db}_restored" >/dev/null
q -d $db -c "CREATE EXTENSION kafka_lake VERSION '1.3' CASCADE" >/dev/null 2>&1
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" 1.3 "the extension is created at 1.3"

q -d $db >/dev/null <<SQL
CREATE TEMP TABLE avro_lines (line text);
\copy avro_lines FROM '$fixtures' WITH (FORMAT csv, QUOTE e'\x01', DELIMITER e'\x02')
CREATE TABLE public.fx AS
  SELECT line::jsonb ->> 'name' AS name, decode(line::jsonb ->> 'hex', 'hex') AS datum FROM avro_lines;
CREATE SERVER srv97 FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers '$KL_BOOTSTRAP', "schema.registry.url" '$KL_REGISTRY_URL');
CREATE SERVER srv97b FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers '$KL_BOOTSTRAP', "schema.registry.url" '$KL_REGISTRY_URL');
SELECT kafka_lake.create_contract('orders97', '{
  "format": "avro", "server": "srv97", "subject": "upgrade14-value", "version": 1,
  "event_id": "order_id", "business_date": {"field": "day"}, "rules": ["amount >= 0"]}');
SELECT kafka_lake.create_source('orders97', 'srv97', '$topic', contract => 'orders97');
SELECT kafka_lake.produce('srv97', '$topic', '\x00'::bytea || int4send(id) || (SELECT datum FROM public.fx WHERE name = n))
  FROM (VALUES (1, $id1, 'ord-1'), (2, $id1, 'ord-2'), (3, $id2, 'ord-3')) AS v(k, id, n) ORDER BY k;
SELECT * FROM kafka_lake.land('orders97');
-- the row the 1.3 library wrote when srv97b fetched the id (this library, on a 1.3
-- catalog, serves srv97b from srv97's row already)
INSERT INTO kafka_lake.schemas (server, registry_url, schema_id, subject, version, schema_type, schema, sha256, fetched_at)
SELECT 'srv97b', registry_url, schema_id, subject, version, schema_type, schema, sha256, fetched_at + interval '1 s'
  FROM kafka_lake.schemas WHERE registry_url = '$KL_REGISTRY_URL' AND schema_id = $id1;
SQL
rows() {
	q -d "$1" -c "SELECT string_agg(server || ':' || schema_id || ':' || coalesce(subject || '/' || version, '-') || ':' || encode(sha256, 'hex'), ',' ORDER BY schema_id, server)
	                FROM kafka_lake.schemas WHERE registry_url = '$KL_REGISTRY_URL' AND schema_id IN ($id1, $id2)"
}
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.schemas WHERE registry_url = '$KL_REGISTRY_URL' AND schema_id = $id1")" 2 \
	"1.3 keeps the id once per server"
state() {
	q -d $db -c "SELECT md5(string_agg(r::text, ',' ORDER BY r.\"offset\", r.batch_id)) FROM kafka_lake.orders97_records r"
}
before=$(state)
first_row=$(q -d $db -c "SELECT server FROM kafka_lake.schemas WHERE registry_url = '$KL_REGISTRY_URL' AND schema_id = $id1 ORDER BY fetched_at LIMIT 1")

ok "q -d $db -c \"ALTER EXTENSION kafka_lake UPDATE TO '1.4'\" >/dev/null 2>'$KL_TMP/up14.err'" "ALTER EXTENSION kafka_lake UPDATE TO '1.4' succeeds"
[ -s "$KL_TMP/up14.err" ] && diag "$(cat "$KL_TMP/up14.err")"
is "$(q -d $db -c "SELECT extversion FROM pg_extension WHERE extname = 'kafka_lake'")" \
	"1.4" "the extension is at 1.4"
is "$(q -d $db -c "SELECT string_agg(server || ':' || schema_id || ':' || (guid IS NULL), ',' ORDER BY schema_id)
                   FROM kafka_lake.schemas WHERE registry_url = '$KL_REGISTRY_URL' AND schema_id IN ($id1, $id2)")" \
	"$first_row:$id1:true,srv97:$id2:true" "one row per registry URL and id, the first fetched, with an empty guid"
is "$(state)" "$before" "the records read the same"
is "$(q -d $db -c "SELECT count(*) FROM kafka_lake.verify('orders97')")" 0 "verify() is clean"

# the registry down: everything the landed records need is in the catalog
ctl '{"mode": "down"}'
is "$(q -d $db 2>&1 <<SQL
SELECT kafka_lake.create_contract('orders97', '{
  "format": "avro", "server": "srv97", "subject": "upgrade14-value", "version": 1,
  "event_id": "order_id", "business_date": {"field": "day"}}');
SELECT kafka_lake.alter_source('orders97', 'orders97', 2);
SELECT status || ' ' || accepted FROM kafka_lake.readmit('orders97');
SELECT kafka_lake.produce('srv97', '$topic', '\x00'::bytea || int4send($id1) || (SELECT datum FROM public.fx WHERE name = 'ord-5'));
SELECT records || ' ' || accepted FROM kafka_lake.land('orders97');
SQL
)" "$(printf '2\n\nreadmitted 1\n3\n1 1')" \
	"with the registry down: a contract version from the catalog, readmit() decodes the refused order, a new record of a known id lands"
ctl '{"mode": "ok"}'
is "$(q -d $db -c "SELECT string_agg(run_status || ' ' || snapshot_status, ',') FROM kafka_lake.bridge('orders97', '2026-06-29')")" \
	"processed published" "the date bridges after the update"

q -d ${db}_fresh -c "CREATE EXTENSION kafka_lake VERSION '1.4' CASCADE" >/dev/null 2>&1
same_extension_objects $db ${db}_fresh "an updated database and a new one hold the same extension objects"

before=$(rows $db)
pg_dump -d $db -f "$KL_TMP/up14.sql" 2>"$KL_TMP/up14dump.err" &&
	psql -X -q -v ON_ERROR_STOP=1 -d ${db}_restored -f "$KL_TMP/up14.sql" >/dev/null 2>"$KL_TMP/up14restore.err"
[ -s "$KL_TMP/up14restore.err" ] && diag "$(cat "$KL_TMP/up14restore.err")"
is "$(rows ${db}_restored)" "$before" "a dump of the updated database restores the schema catalog as it was"

q -d postgres -c "DROP DATABASE $db" -c "DROP DATABASE ${db}_fresh" -c "DROP DATABASE ${db}_restored" >/dev/null
