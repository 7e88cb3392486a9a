#!/usr/bin/env bash
# test/t/29i_avro_header.sh: an Avro topic written by Confluent's own serializer
# (@confluentinc/schemaregistry, from npm: test/registry/header_records.js) in its
# newer form, the writer schema's GUID in the __value_schema_id header and the bare
# datum as the value, lands as the classic form (the id in the value) of the same
# records does: the same fields, typed, and the manifest names the same schema id; a
# header with magic byte 0 and an id works too, and a header that is not a schema id
# quarantines its record with the header named.  The records are produced with their
# headers by the test broker's `send`.  Needs the broker, the registry peer and node.
source "$(dirname "$0")/../lib/tap.sh"
plan 9
dir=$(cd "$(dirname "$0")/../registry" && pwd)
q() { psql -X -A -t -q -d kl_test -v ON_ERROR_STOP=1 "$@" 2>&1; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval('d' + sys.argv[1]))" "$1" <<<"$out"; }
send() { "$KL_BROKER" send --bootstrap "$KL_BOOTSTRAP" --topic "$1" --partition 0 --value-hex "$2" ${3:+--header "__value_schema_id=$3"} >/dev/null; }
topic=hdr29i.t
python3 "$KL_REGISTRY" ctl --dir "$KL_REGISTRY_DIR" '{"mode": "ok", "auth": null, "delay_ms": 0}' >/dev/null

out=$(cd "$dir" && timeout 120 node header_records.js "$KL_REGISTRY_URL" "$topic-value" 2>&1)
diag "$out"
id=$(field "['id']")
ok "[ -n '$id' ] && [ '$(field "['records'][0]['header_hex']")' = '01$(field "['guid']" | tr -d -)' ]" \
	"Confluent's serializer puts magic byte 1 and the schema's GUID in the header"

"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic" 1 >/dev/null
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic.classic" 1 >/dev/null
"$KL_BROKER" ctl --dir "$KL_BROKER_DIR" create "$topic.json" 1 >/dev/null
q >/dev/null <<SQL
CREATE SERVER hdr29i FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers '$KL_BOOTSTRAP', "schema.registry.url" '$KL_REGISTRY_URL');
SELECT kafka_lake.create_contract('hdr29i', '{"format": "avro", "server": "hdr29i", "subject": "$topic-value",
  "event_id": "order_id", "business_date": {"field": "day"}}');
SELECT kafka_lake.create_source('hdr29i', 'hdr29i', '$topic', contract => 'hdr29i');
SELECT kafka_lake.create_source('hdr29i_classic', 'hdr29i', '$topic.classic', contract => 'hdr29i');
SELECT kafka_lake.create_contract('hdr29i_json', '{"type": "object", "framing": "confluent",
  "properties": {"a": {"type": "integer"}}, "required": ["a"]}');
SELECT kafka_lake.create_source('hdr29i_json', 'hdr29i', '$topic.json', contract => 'hdr29i_json');
-- plain JSONL: the test reads the files' bytes
SELECT kafka_lake.set_compression(s, 'none') FROM unnest(ARRAY['hdr29i', 'hdr29i_classic', 'hdr29i_json']) s;
SQL
for i in 0 1; do
	send "$topic" "$(field "['records'][$i]['value_hex']")" "$(field "['records'][$i]['header_hex']")"
	send "$topic.classic" "$(field "['records'][$i]['prefixed_hex']")"
done
# the header's other form, magic byte 0 and the id; and a header that is no schema id
send "$topic" "$(field "['records'][0]['value_hex']")" "00$(printf '%08x' "$id")"
send "$topic" "$(field "['records'][0]['value_hex']")" "0200"

is "$(q -c "SELECT records || ' ' || accepted || ' ' || duplicates || ' ' || quarantined FROM kafka_lake.land('hdr29i')")" \
	"4 2 1 1" "four records land: the two of the serializer, a duplicate with the id in the header, one quarantined"
is "$(q -c "SELECT records || ' ' || accepted FROM kafka_lake.land('hdr29i_classic')")" "2 2" \
	"the classic form of the same records lands"
events() { q -c "SELECT string_agg(order_id || ' ' || amount || ' ' || day || ' ' || coalesce(note, '-'), ', ' ORDER BY order_id) FROM kafka_lake.$1_events"; }
is "$(events hdr29i)" "h-1 12.30 2026-06-29 -, h-2 2.55 2026-06-29 second" "the records named by GUID read back typed"
is "$(events hdr29i)" "$(events hdr29i_classic)" "as the classic form of the same records does"
manifest_ids() {
	q -c "SELECT string_agg(coalesce(e->>'schema_id', '-'), ' ' ORDER BY (e->>'offset')::int)
	        FROM pg_ls_dir(kl_test.landing('$1') || '/topic=$2/partition=0') AS d,
	             json_array_elements(pg_read_file(kl_test.landing('$1') || '/topic=$2/partition=0/' || d || '/manifest.json')::json -> 'entries') AS e
	       WHERE d LIKE 'batch=%'"
}
is "$(manifest_ids hdr29i "$topic")" "$id $id $id -" "the manifest names the schema id of the GUID, and of the id, in the header"
like "$(q -c "SELECT validation_error FROM kafka_lake.hdr29i_records WHERE status = 'quarantined'")" \
	"not an Avro value in Confluent's wire format (header __value_schema_id): unknown magic byte" \
	"a header that is no schema id quarantines its record, naming the header"

# JSON through the registry in the header form: the value is the JSON alone
send "$topic.json" "$(printf '{"a": 4}' | xxd -p)" "00$(printf '%08x' "$id")"
is "$(q -c "SELECT records || ' ' || accepted FROM kafka_lake.land('hdr29i_json')" -c "SELECT a FROM kafka_lake.hdr29i_json_events")" \
	"$(printf '1 1\n4')" "a JSON contract with \"framing\": \"confluent\" reads a value whose schema id is in the header"
is "$(manifest_ids hdr29i_json "$topic.json")" "$id" "and its manifest keeps the header's schema id"

q >/dev/null <<'SQL'
SELECT kafka_lake.drop_source('hdr29i', drop_landing => true);
SELECT kafka_lake.drop_source('hdr29i_classic', drop_landing => true);
SELECT kafka_lake.drop_source('hdr29i_json', drop_landing => true);
DROP SERVER hdr29i;
SQL
