#!/usr/bin/env bash
# test/t/29d_registry_client.sh: an independent client proves the Schema Registry test
# peer compatible: Confluent's own JavaScript client (@confluentinc/schemaregistry,
# installed by test/run into test/registry/node_modules) registers a schema through
# the peer's path prefix with basic auth, reads it back, and writes and reads a record
# in Confluent's wire format with its Avro serializer; then kafka_lake fetches the
# schemas that client registered (by id, and by subject) from the same peer.
# Needs the registry peer and node, not the broker.
source "$(dirname "$0")/../lib/tap.sh"
plan 9
dir=$(cd "$(dirname "$0")/../registry" && pwd)
q() { psql -X -A -t -q -d kl_test "$@" 2>&1; }
ctl() { python3 "$KL_REGISTRY" ctl --dir "$KL_REGISTRY_DIR" "$1" >/dev/null; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps(eval('d' + sys.argv[1])))" "$1" <<<"$out"; }

ok "[ -d '$dir/node_modules/@confluentinc/schemaregistry' ]" "Confluent's client is installed (test/run: npm install in test/registry)"
ctl '{"mode": "ok", "auth": "node29:kl29d-pass", "delay_ms": 0}'
out=$(cd "$dir" && timeout 120 node check_client.js "$KL_REGISTRY_URL/some/prefix" node29:kl29d-pass 2>&1)
diag "$out"
is "$(field "['again']")" "$(field "['id']")" "the client registering the same schema again gets the same id"
is "$(field "['latest']['version']")" "1" "it reads the subject's latest version"
is "$(field "['roundtrip']")" '{"machine_id": "machine-07", "units": 42}' "a record written and read in the wire format with the client's Avro serde"
like "$(field "['wire_hex']")" '"00000000' "the wire format starts with the magic byte and the schema id"

id=$(field "['id']")
wire_id=$(field "['wire_id']")
q -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE SERVER reg29d FOREIGN DATA WRAPPER kafka_lake
  OPTIONS (brokers '127.0.0.1:9', "schema.registry.url" '$KL_REGISTRY_URL/some/prefix');
CREATE USER MAPPING FOR CURRENT_USER SERVER reg29d
  OPTIONS ("schema.registry.basic.auth.user.info" 'node29:kl29d-pass');
SQL
is "$(q -c "SELECT schema::text FROM kafka_lake.registry_schema('reg29d', $id)")" \
	"$(field "['schema']" | python3 -c 'import json,sys; print(json.load(sys.stdin))')" \
	"kafka_lake reads the schema the client registered, as the client read it"
is "$(q -c "SELECT (schema->>'type') || ' ' || (schema->'fields'->0->>'name') FROM kafka_lake.registry_schema('reg29d', $wire_id)")" \
	"record machine_id" "and the schema of the id in the client's wire-format record (the serializer's own)"
is "$(q -c "SELECT schema_id || ' ' || version FROM kafka_lake.registry_subject('reg29d', 'node-check-value')")" "$id 1" \
	"and the subject's latest version"
ctl '{"mode": "ok", "auth": null}'
q -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
DROP USER MAPPING FOR CURRENT_USER SERVER reg29d;
DROP SERVER reg29d;
DELETE FROM kafka_lake.schemas WHERE server = 'reg29d';
SQL
ok "[ -z \"\$(q -c \"SELECT 1 FROM pg_foreign_server WHERE srvname = 'reg29d'\")\" ]" "cleaned up"
