#!/usr/bin/env node
// test/avro/encode.js -- writes test/fixtures/avro/orders.jsonl, the Avro
// records test/pgtap/29e_avro_land.sql produces, lands and reads back.
//
//   cd test/avro && npm install && node encode.js        (or: --check)
//
// Every datum is encoded by avsc (https://github.com/mtth/avsc), independent
// of src/format/avro.c, from the values below written as kafka_lake reads them
// back (decimals as text, timestamps as ISO-8601, dates as YYYY-MM-DD): this
// file turns them into the logical types' underlying values itself.  One line
// per record: {"name", "writer" (which schema below), "hex" (the datum, without
// any framing: the test frames it with the registry's id)}.
// --check regenerates into memory and exits 1 if the committed file differs.
'use strict';
const fs = require('fs');
const path = require('path');
const avro = require('avsc');

const customer = {
  type: 'record', name: 'customer',
  fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }],
};
const fields = [
  { name: 'order_id', type: 'string' },
  { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
  { name: 'ordered_at', type: { type: 'long', logicalType: 'timestamp-millis' } },
  { name: 'day', type: { type: 'int', logicalType: 'date' } },
  { name: 'note', type: ['null', 'string'], default: null },
  { name: 'customer', type: customer },
  { name: 'status', type: { type: 'enum', name: 'status', symbols: ['new', 'paid', 'shipped'] } },
];
const SCHEMAS = {
  // the reader's schema, and the first writer's
  v1: { type: 'record', name: 'order', namespace: 'shop', fields },
  // a second writer: a field added (with a default) between two others
  v2: {
    type: 'record', name: 'order', namespace: 'shop',
    fields: [...fields.slice(0, 2), { name: 'channel', type: 'string', default: 'web' }, ...fields.slice(2)],
  },
  // a writer the reader cannot read: order_id is an int
  bad: {
    type: 'record', name: 'order', namespace: 'shop',
    fields: [{ name: 'order_id', type: 'int' }, ...fields.slice(1)],
  },
  // every other type and logical type, once
  types: {
    type: 'record', name: 't',
    fields: [
      { name: 'b', type: 'boolean' }, { name: 'i', type: 'int' }, { name: 'l', type: 'long' },
      { name: 'f', type: 'float' }, { name: 'd', type: 'double' }, { name: 's', type: 'string' },
      { name: 'by', type: 'bytes' }, { name: 'fx', type: { type: 'fixed', name: 'two', size: 2 } },
      { name: 'u', type: { type: 'string', logicalType: 'uuid' } },
      { name: 't', type: { type: 'int', logicalType: 'time-millis' } },
      { name: 'lt', type: { type: 'long', logicalType: 'local-timestamp-millis' } },
      { name: 'm', type: { type: 'map', values: 'int' } },
      { name: 'a', type: { type: 'array', items: 'string' } },
      { name: 'un', type: ['int', 'string'] },
      { name: 'n3', type: ['null', 'int', 'string'] },
      { name: 'e', type: { type: 'enum', name: 'E', symbols: ['A', 'B'] } },
      { name: 'ne', type: ['null', { type: 'enum', name: 'F', symbols: ['X'] }] },
    ],
  },
};

// the underlying values of the logical types
function unscaled(text, scale) {
  const neg = text.startsWith('-');
  const [i, f = ''] = text.replace('-', '').split('.');
  let n = BigInt(i + f.padEnd(scale, '0'));
  if (neg) n = -n;
  // two's complement, big-endian, fewest bytes
  let hex = (n < 0n ? (1n << 64n) + n : n).toString(16);
  if (hex.length % 2) hex = '0' + hex;
  let b = Buffer.from(hex, 'hex');
  if (n < 0n) { while (b.length > 1 && b[0] === 0xff && (b[1] & 0x80)) b = b.subarray(1); }
  else if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return b;
}
function underlying(v, writer) {
  if (writer === 'types') {
    return {
      ...v, by: Buffer.from(v.by, 'base64'), fx: Buffer.from(v.fx, 'base64'),
      t: 3723123, lt: Date.parse(v.lt + 'Z'), un: { string: v.un.string }, n3: { int: v.n3.int }, ne: { F: v.ne },
    };
  }
  return {
    ...v,
    amount: unscaled(v.amount, 2),
    ordered_at: Date.parse(v.ordered_at),
    day: Date.parse(v.day + 'T00:00:00Z') / 86400000,
    note: v.note === null ? null : { string: v.note },
  };
}
const plain = (s) => JSON.parse(JSON.stringify(s, (k, x) => (x && typeof x === 'object' && x.logicalType ? (() => { const o = { ...x }; delete o.logicalType; return o; })() : x)));
const typeOf = (name) => avro.Type.forSchema(plain(SCHEMAS[name]), { wrapUnions: true });

const RECORDS = [
  ['ord-1', 'v1', { order_id: 'ord-1', amount: '12.30', ordered_at: '2026-06-29T10:00:00.123Z', day: '2026-06-29', note: null, customer: { id: 7, name: 'Ann' }, status: 'paid' }],
  ['ord-2', 'v1', { order_id: 'ord-2', amount: '-0.05', ordered_at: '2026-06-29T23:59:59.000Z', day: '2026-06-29', note: 'gift – wrapped', customer: { id: 8, name: 'Bob' }, status: 'new' }],
  ['ord-3', 'v2', { order_id: 'ord-3', amount: '99999999.99', channel: 'shop', ordered_at: '2026-06-30T08:00:00.000Z', day: '2026-06-30', note: null, customer: { id: 9, name: 'Cy' }, status: 'shipped' }],
  ['ord-5', 'v1', { order_id: 'ord-5', amount: '7.00', ordered_at: '2026-06-30T09:00:00.000Z', day: '2026-06-30', note: 'late', customer: { id: 7, name: 'Ann' }, status: 'new' }],
  ['bad-writer', 'bad', { order_id: 4, amount: '1.00', ordered_at: '2026-06-30T08:00:00.000Z', day: '2026-06-30', note: null, customer: { id: 9, name: 'Cy' }, status: 'new' }],
  ['types', 'types', { b: true, i: -3, l: 1234567890123, f: 1.5, d: 0.1, s: 'héllo', by: 'AQL/', fx: 'CQg=', u: '6f1c2b9e-3a1d-4c5e-9f00-1a2b3c4d5e6f', t: '01:02:03.123', lt: '2026-06-29T10:00:00.123', m: { k: 1 }, a: ['x', 'y'], un: { string: 'z' }, n3: { int: 5 }, e: 'B', ne: 'X' }],
];

function lines() {
  return RECORDS.map(([name, writer, value]) => {
    const hex = typeOf(writer).toBuffer(underlying(value, writer)).toString('hex');
    return JSON.stringify({ name, writer, schema: SCHEMAS[writer], hex });
  }).join('\n') + '\n';
}

const out = path.join(__dirname, '..', 'fixtures', 'avro', 'orders.jsonl');
if (process.argv.includes('--check')) {
  if (fs.readFileSync(out, 'utf8') !== lines()) {
    console.error('test/fixtures/avro/orders.jsonl is not what test/avro/encode.js makes: run it');
    process.exit(1);
  }
} else {
  fs.writeFileSync(out, lines());
}
