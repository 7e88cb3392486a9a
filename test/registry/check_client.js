// test/registry/check_client.js -- Confluent's own Schema Registry client for
// JavaScript (@confluentinc/schemaregistry, from npm) against the test peer, so
// that the peer's REST is proven compatible with a real client: it registers a
// schema (twice: the same id), reads it back by subject and id, and writes and
// reads a record in Confluent's wire format with the client's Avro serializer
// (which registers its schema itself).  Prints one JSON object of what it saw.
//
//   node check_client.js BASE_URL [user:password]
const sr = require('@confluentinc/schemaregistry');

async function main() {
  const [url, userInfo] = process.argv.slice(2);
  const conf = { baseURLs: [url], maxRetries: 0 };
  if (userInfo) conf.basicAuthCredentials = { credentialsSource: 'USER_INFO', userInfo };
  const client = new sr.SchemaRegistryClient(conf);
  const schema = JSON.stringify({
    type: 'record', name: 'reading', namespace: 'kafka_lake.check',
    fields: [{ name: 'machine_id', type: 'string' }, { name: 'units', type: 'int' }],
  });
  const out = {};
  out.id = await client.register('node-check-value', { schemaType: 'AVRO', schema });
  // a second client: nothing cached, the peer must answer the same id
  const fresh = new sr.SchemaRegistryClient(conf);
  out.again = await fresh.register('node-check-value', { schemaType: 'AVRO', schema });
  const latest = await fresh.getLatestSchemaMetadata('node-check-value');
  out.latest = { id: latest.id, version: latest.version, subject: latest.subject };
  const byId = await fresh.getBySubjectAndId('node-check-value', out.id);
  out.schema = byId.schema;

  const ser = new sr.AvroSerializer(client, sr.SerdeType.VALUE, { autoRegisterSchemas: true });
  const value = { machine_id: 'machine-07', units: 42 };
  const bytes = await ser.serialize('node-wire', value);
  out.wire_hex = bytes.toString('hex');
  out.wire_id = bytes.readInt32BE(1);
  const de = new sr.AvroDeserializer(new sr.SchemaRegistryClient(conf), sr.SerdeType.VALUE, {});
  out.roundtrip = await de.deserialize('node-wire', bytes);
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.message || e) }));
  process.exit(1);
});
