// test/registry/header_records.js -- records written as Confluent's newer clients
// write them, by Confluent's own serializer (@confluentinc/schemaregistry, from npm):
// the writer schema named by its GUID in the __value_schema_id header
// (HeaderSchemaIdSerializer), the value the bare Avro datum; and, for comparison, the
// same records with the id in the value (PrefixSchemaIdSerializer, the classic form).
// Registers the schema under SUBJECT first and serializes with its latest version.
// Prints one JSON object: {"id", "guid", "records": [{"order", "value_hex",
// "header_hex", "prefixed_hex"}]}.
//
//   node header_records.js BASE_URL SUBJECT
const sr = require('@confluentinc/schemaregistry');

async function main() {
  const [url, subject] = process.argv.slice(2);
  const conf = { baseURLs: [url], maxRetries: 0 };
  const client = new sr.SchemaRegistryClient(conf);
  const schema = JSON.stringify({
    type: 'record', name: 'order', namespace: 'kafka_lake.header',
    fields: [
      { name: 'order_id', type: 'string' },
      { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
      { name: 'day', type: { type: 'int', logicalType: 'date' } },
      { name: 'note', type: ['null', 'string'], default: null },
    ],
  });
  const id = await client.register(subject, { schemaType: 'AVRO', schema });
  const latest = await client.getLatestSchemaMetadata(subject);
  // the serializers name the subject <topic>-value
  const topic = subject.replace(/-value$/, '');
  const byHeader = new sr.AvroSerializer(client, sr.SerdeType.VALUE,
    { useLatestVersion: true, schemaIdSerializer: sr.HeaderSchemaIdSerializer });
  const byPrefix = new sr.AvroSerializer(client, sr.SerdeType.VALUE, { useLatestVersion: true });
  const orders = [
    // decimals go as bytes of the unscaled two's complement integer (12.30 -> 1230)
    { order_id: 'h-1', amount: Buffer.from([0x04, 0xce]), day: 20633, note: null },
    { order_id: 'h-2', amount: Buffer.from([0x00, 0xff]), day: 20633, note: 'second' },
  ];
  const records = [];
  for (const o of orders) {
    const headers = {};
    const value = await byHeader.serialize(topic, o, headers);
    const prefixed = await byPrefix.serialize(topic, o, {});
    records.push({
      order: o.order_id,
      value_hex: value.toString('hex'),
      header_hex: Buffer.from(headers[sr.VALUE_SCHEMA_ID_HEADER] || []).toString('hex'),
      prefixed_hex: prefixed.toString('hex'),
    });
  }
  console.log(JSON.stringify({ id, guid: latest.guid, records }));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.stack || e) }));
  process.exit(1);
});
