#!/usr/bin/env node
// test/avro/generate.js -- writes test/fixtures/avro/cases.jsonl, the cases
// test/pgtap/29b_avro_decode.sql decodes with kafka_lake.avro_decode().
//
//   cd test/avro && npm install && node generate.js        (or: --check)
//
// Every datum is encoded by avsc (https://github.com/mtth/avsc), an Avro
// implementation independent of src/format/avro.c, and every expected value
// is what avsc decodes (with the reader's schema and avsc's resolver when a
// case has one), turned into kafka_lake's JSON presentation here (bytes as
// base64, decimals from the unscaled integer, timestamps as ISO-8601 UTC,
// unions of null and one type unwrapped, other unions as {"branch": value}),
// written independently of the C code.  The error cases are bytes avsc
// encoded and then cut short or changed (avsc must refuse them too, where it
// checks that much), or bytes written by hand, with the SQLSTATE and a part
// of the message kafka_lake must give.  One case per line:
//   {"name", "writer", "reader" (or null), "hex", "expected" (or null),
//    "sqlstate" (or null), "error" (a substring of the detail, or null),
//    "framed" (true: the value goes through avro_frame first)}
// --check regenerates into memory and exits 1 if the committed file differs.
'use strict';
const fs = require('fs');
const path = require('path');
const avro = require('avsc');

// longs as BigInt, so that 64-bit values survive JavaScript's numbers
const longType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (n1, n2) => (n1 === n2 ? 0 : (n1 < n2 ? -1 : 1)),
});
const opts = () => ({ wrapUnions: true, registry: { long: longType } });
// avsc sees primitives without their logical types (this file presents them)
const PRIMITIVES = ['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string'];
function plain(s) {
  if (Array.isArray(s)) return s.map(plain);
  if (s === null || typeof s !== 'object') return s;
  if (PRIMITIVES.includes(s.type)) return s.type;
  const o = { ...s };
  delete o.logicalType;
  if (typeof o.type === 'object') o.type = plain(o.type);
  if (o.fields) o.fields = o.fields.map((f) => ({ ...f, type: plain(f.type) }));
  if (o.items) o.items = plain(o.items);
  if (o.values) o.values = plain(o.values);
  return o;
}
const typeOf = (schema) => avro.Type.forSchema(plain(schema), opts());

// --- kafka_lake's presentation of a value avsc decoded, by the reader's schema
function pad(n, w) { return String(n).padStart(w, '0'); }
function floorDiv(a, b) { const q = a / b; return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q; }
function isoDate(days) { return new Date(Number(days) * 86400000).toISOString().slice(0, 10); }
function timeText(v, unitsPerSec, digits) {
  const secs = v / unitsPerSec;
  return `${pad(secs / 3600n, 2)}:${pad((secs / 60n) % 60n, 2)}:${pad(secs % 60n, 2)}.${pad(v % unitsPerSec, digits)}`;
}
function timestampText(v, unitsPerSec, digits, zone) {
  const perDay = 86400n * unitsPerSec;
  const days = floorDiv(v, perDay);
  return `${isoDate(days)}T${timeText(v - days * perDay, unitsPerSec, digits)}${zone ? 'Z' : ''}`;
}
function decimalText(buf, scale) {
  let v = 0n;
  for (const b of buf) v = (v << 8n) | BigInt(b);
  if (buf.length && (buf[0] & 0x80)) v -= 1n << BigInt(8 * buf.length);
  const neg = v < 0n;
  let digits = (neg ? -v : v).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = digits.slice(0, digits.length - scale) + '.' + digits.slice(digits.length - scale);
  }
  return (neg ? '-' : '') + digits;
}
function shortestFloat(x) {
  for (let p = 1; p <= 9; p++) {
    const y = Number(x.toPrecision(p));
    if (Math.fround(y) === x) return y;
  }
  return x;
}
function real(x, isFloat) {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return { raw: String(isFloat ? shortestFloat(x) : x) };
}
// the specification: an invalid logical type is ignored (scale within 0..precision)
function validDecimal(s) {
  const scale = s.scale === undefined ? 0 : s.scale;
  return Number.isInteger(s.precision) && s.precision > 0 && Number.isInteger(scale) && scale >= 0 && scale <= s.precision;
}
// zz(n): a zigzag varint's hex
function zz(n) {
  let u = (BigInt(n) << 1n) ^ (BigInt(n) < 0n ? -1n : 0n);
  u = BigInt.asUintN(64, u);
  let h = '';
  do {
    let b = Number(u & 0x7fn);
    u >>= 7n;
    if (u) b |= 0x80;
    h += b.toString(16).padStart(2, '0');
  } while (u);
  return h;
}
function uuidText(buf) {
  const h = buf.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// schema: the reader's (JSON, with named types resolved through names)
function present(schema, v, names) {
  if (typeof schema === 'string') {
    if (names[schema]) return present(names[schema], v, names);
    schema = { type: schema };
  }
  if (Array.isArray(schema)) {
    if (v === null) return null;
    const branch = Object.keys(v)[0];
    const s = schema.find((b) => branchName(b, names) === branch);
    const inner = present(s, v[branch], names);
    const nullable = schema.length === 2 && schema.some((b) => b === 'null' || b.type === 'null');
    return nullable ? inner : { [branch]: inner };
  }
  if (typeof schema.type !== 'string') return present(schema.type, v, names);
  const lt = schema.logicalType;
  switch (schema.type) {
    case 'null': return null;
    case 'boolean': case 'string': case 'enum': return v;
    case 'int':
      if (lt === 'date') return isoDate(v);
      if (lt === 'time-millis') return timeText(BigInt(v), 1000n, 3);
      return { raw: String(v) };
    case 'long':
      if (lt === 'timestamp-millis') return timestampText(v, 1000n, 3, true);
      if (lt === 'timestamp-micros') return timestampText(v, 1000000n, 6, true);
      if (lt === 'local-timestamp-millis') return timestampText(v, 1000n, 3, false);
      if (lt === 'local-timestamp-micros') return timestampText(v, 1000000n, 6, false);
      if (lt === 'time-micros') return timeText(v, 1000000n, 6);
      return { raw: v.toString() };
    case 'float': return real(Math.fround(v), true);
    case 'double': return real(v, false);
    case 'bytes':
      if (lt === 'decimal' && validDecimal(schema)) return { raw: decimalText(v, schema.scale || 0) };
      return v.toString('base64');
    case 'fixed':
      if (lt === 'decimal' && validDecimal(schema)) return { raw: decimalText(v, schema.scale || 0) };
      if (lt === 'uuid') return uuidText(v);
      return v.toString('base64');
    case 'array': return v.map((x) => present(schema.items, x, names));
    case 'map': {
      const o = {};
      for (const k of Object.keys(v)) o[k] = present(schema.values, v[k], names);
      return o;
    }
    case 'record': case 'error': {
      const o = {};
      for (const f of schema.fields) o[f.name] = present(f.type, v[f.name], names);
      return o;
    }
  }
  return present(names[schema.type], v, names);
}
function branchName(s, names) {
  if (typeof s === 'string') return names[s] ? branchName(names[s], names) : s;
  if (typeof s.type !== 'string') return branchName(s.type, names);
  if (['record', 'error', 'enum', 'fixed'].includes(s.type)) return fullnames.get(s);
  return names[s.type] ? branchName(names[s.type], names) : s.type;
}
const fullnames = new WeakMap();
function collectNames(schema, names, ns) {
  if (Array.isArray(schema)) { schema.forEach((b) => collectNames(b, names, ns)); return; }
  if (typeof schema !== 'object' || schema === null) return;
  if (typeof schema.type === 'object') { collectNames(schema.type, names, ns); return; }
  if (['record', 'error', 'enum', 'fixed'].includes(schema.type)) {
    const space = schema.name.includes('.') ? schema.name.slice(0, schema.name.lastIndexOf('.')) : (schema.namespace ?? ns);
    const full = schema.name.includes('.') || !space ? schema.name : `${space}.${schema.name}`;
    names[full] = schema;
    names[schema.name] = schema;
    fullnames.set(schema, full);
    (schema.fields || []).forEach((f) => collectNames(f.type, names, space));
  }
  if (schema.items) collectNames(schema.items, names, ns);
  if (schema.values) collectNames(schema.values, names, ns);
  if (typeof schema.type === 'string' && !PRIMITIVES.includes(schema.type) && schema.fields === undefined && schema.symbols === undefined && schema.size === undefined) return;
}

// JSON text with {raw} numbers written as they are
function dump(v) {
  if (v === null) return 'null';
  if (typeof v === 'object' && 'raw' in v && Object.keys(v).length === 1) return v.raw;
  if (Array.isArray(v)) return '[' + v.map(dump).join(', ') + ']';
  if (typeof v === 'object') return '{' + Object.keys(v).map((k) => JSON.stringify(k) + ': ' + dump(v[k])).join(', ') + '}';
  return JSON.stringify(v);
}

const cases = [];
// ok(name, writer, value, reader): encode value with the writer, decode with avsc
function ok(name, writer, value, reader = null) {
  const wt = typeOf(writer);
  const buf = wt.toBuffer(value);
  const rs = reader || writer;
  const rt = typeOf(rs);
  const decoded = reader ? rt.fromBuffer(buf, rt.createResolver(wt)) : wt.fromBuffer(buf);
  const names = {};
  collectNames(rs, names, '');
  cases.push({ name, writer, reader, hex: buf.toString('hex'), expected: dump(present(rs, decoded, names)), sqlstate: null, error: null });
  return buf;
}
// bad(name, writer, hex, sqlstate, error, {reader, avscRejects, framed})
function bad(name, writer, hex, sqlstate, error, o = {}) {
  if (o.avscRejects) {
    let threw = false;
    try { typeOf(writer).fromBuffer(Buffer.from(hex, 'hex')); } catch (e) { threw = true; }
    if (!threw) throw new Error(`avsc decodes the bad case "${name}"`);
  }
  const c = { name, writer, reader: o.reader || null, hex, expected: null, sqlstate, error };
  if (o.framed) c.framed = true;
  cases.push(c);
}

// --- primitives
ok('null', 'null', null);
ok('boolean true', 'boolean', true);
ok('boolean false', 'boolean', false);
ok('int 0', 'int', 0);
ok('int -1', 'int', -1);
ok('int max', 'int', 2147483647);
ok('int min', 'int', -2147483648);
ok('long max', 'long', 9223372036854775807n);
ok('long min', 'long', -9223372036854775808n);
ok('long 1e15', 'long', 1000000000000000n);
ok('float 3.14', 'float', Math.fround(3.14));
ok('float -0.1', 'float', Math.fround(-0.1));
ok('float NaN', 'float', NaN);
ok('float Infinity', 'float', Infinity);
ok('double pi', 'double', Math.PI);
ok('double 1e300', 'double', 1e300);
ok('double 5e-324', 'double', 5e-324);
ok('double -Infinity', 'double', -Infinity);
ok('double NaN', 'double', NaN);
ok('bytes', 'bytes', Buffer.from([0, 1, 2, 0xff, 0xfe]));
ok('bytes empty', 'bytes', Buffer.alloc(0));
ok('string ascii', 'string', 'hello, "world"\n');
ok('string unicode', 'string', 'Grüße, 東京 😀');
ok('string empty', 'string', '');

// --- logical types
const dec = (precision, scale) => ({ type: 'bytes', logicalType: 'decimal', precision, scale });
const decBytes = (n, len) => {
  // n: BigInt unscaled; two's complement big-endian in len bytes (or minimal)
  let l = len || 1;
  while (!len && (n >= (1n << BigInt(8 * l - 1)) || n < -(1n << BigInt(8 * l - 1)))) l++;
  const b = Buffer.alloc(l);
  let v = n < 0n ? n + (1n << BigInt(8 * l)) : n;
  for (let i = l - 1; i >= 0; i--) { b[i] = Number(v & 0xffn); v >>= 8n; }
  return b;
};
ok('decimal bytes 12.30', dec(10, 2), decBytes(1230n));
ok('decimal bytes negative', dec(10, 2), decBytes(-1230n));
ok('decimal bytes scale 0', dec(20, 0), decBytes(12345678901234567890n));
ok('decimal bytes scale 4 small', dec(8, 4), decBytes(5n));
ok('decimal bytes scale 4 negative small', dec(8, 4), decBytes(-5n));
ok('decimal bytes big', dec(38, 6), decBytes(-12345678901234567890123456789012345678n));
ok('decimal bytes zero', dec(5, 2), decBytes(0n));
const decFixed = (size, precision, scale) => ({ type: 'fixed', name: 'money', size, logicalType: 'decimal', precision, scale });
ok('decimal fixed', decFixed(8, 18, 4), decBytes(1234567n, 8));
ok('decimal fixed negative', decFixed(8, 18, 4), decBytes(-1234567n, 8));
ok('decimal fixed scale 0', decFixed(4, 9, 0), decBytes(-42n, 4));
ok('date', { type: 'int', logicalType: 'date' }, 20633);
ok('date before 1970', { type: 'int', logicalType: 'date' }, -1);
ok('time-millis', { type: 'int', logicalType: 'time-millis' }, 36000123);
ok('time-micros', { type: 'long', logicalType: 'time-micros' }, 36000123456n);
ok('timestamp-millis', { type: 'long', logicalType: 'timestamp-millis' }, 1782727200123n);
ok('timestamp-millis before 1970', { type: 'long', logicalType: 'timestamp-millis' }, -1n);
ok('timestamp-micros', { type: 'long', logicalType: 'timestamp-micros' }, 1782727200123456n);
ok('local-timestamp-millis', { type: 'long', logicalType: 'local-timestamp-millis' }, 1782727200123n);
ok('local-timestamp-micros', { type: 'long', logicalType: 'local-timestamp-micros' }, 1782727200000001n);
ok('uuid string', { type: 'string', logicalType: 'uuid' }, '6f1c2b9e-3a1d-4c5e-9f00-1a2b3c4d5e6f');
ok('uuid fixed', { type: 'fixed', name: 'u', size: 16, logicalType: 'uuid' }, Buffer.from('6f1c2b9e3a1d4c5e9f001a2b3c4d5e6f', 'hex'));
ok('unknown logical type', { type: 'long', logicalType: 'timestamp-nanos-of-tomorrow' }, 7n);
ok('invalid decimal falls back to bytes', { type: 'bytes', logicalType: 'decimal', precision: 2, scale: 3 }, Buffer.from([1, 2]));

// --- complex types
const color = { type: 'enum', name: 'Color', namespace: 'com.example', symbols: ['RED', 'GREEN', 'BLUE'] };
ok('enum', color, 'BLUE');
ok('nullable union null', ['null', 'string'], null);
ok('nullable union value', ['null', 'string'], { string: 'x' });
ok('nullable union, null second', ['long', 'null'], { long: 5n });
ok('union of three', ['null', 'int', 'string'], { string: 'abc' });
ok('union of three, null', ['null', 'int', 'string'], null);
ok('union with a record', ['int', { type: 'record', name: 'P', namespace: 'geo', fields: [{ name: 'x', type: 'int' }] }], { 'geo.P': { x: 3 } });
ok('array', { type: 'array', items: 'int' }, [1, 2, 3, -4]);
ok('array empty', { type: 'array', items: 'string' }, []);
ok('map', { type: 'map', values: 'long' }, { a: 1n, 'b c': -2n });
ok('map empty', { type: 'map', values: 'long' }, {});
ok('fixed', { type: 'fixed', name: 'md5', size: 4 }, Buffer.from([0xde, 0xad, 0xbe, 0xef]));
const nested = {
  type: 'record', name: 'Order', namespace: 'shop',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'customer', type: { type: 'record', name: 'Customer', fields: [{ name: 'name', type: 'string' }, { name: 'vip', type: 'boolean' }] } },
    { name: 'lines', type: { type: 'array', items: { type: 'record', name: 'Line', fields: [{ name: 'sku', type: 'string' }, { name: 'qty', type: 'int' }, { name: 'price', type: dec(10, 2) }] } } },
    { name: 'tags', type: { type: 'map', values: 'string' } },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID'] } },
    { name: 'billing', type: ['null', 'Customer'], default: null },
  ],
};
ok('nested record', nested, {
  id: 42n, customer: { name: 'Ann', vip: true },
  lines: [{ sku: 'a-1', qty: 2, price: decBytes(1999n) }, { sku: 'b-2', qty: 1, price: decBytes(-500n) }],
  tags: { channel: 'web' }, note: { string: 'leave at door' }, status: 'PAID', billing: { 'shop.Customer': { name: 'Bob', vip: false } },
});
const linked = { type: 'record', name: 'Node', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'Node'] }] };
ok('recursive record', linked, { v: 1, next: { Node: { v: 2, next: { Node: { v: 3, next: null } } } } });

// the bench's machine event (bench/land.sh's fields)
const machineEvent = {
  type: 'record', name: 'MachineEvent', namespace: 'kafka_lake.bench',
  fields: [
    { name: 'event_id', type: 'string' },
    { name: 'schema_version', type: 'int' },
    { name: 'event_time', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'business_date', type: { type: 'int', logicalType: 'date' } },
    { name: 'plant_id', type: 'string' },
    { name: 'line_id', type: 'string' },
    { name: 'work_order_id', type: 'string' },
    { name: 'machine_id', type: 'string' },
    { name: 'product_code', type: 'string' },
    { name: 'operation', type: 'string' },
    { name: 'units_produced', type: 'int' },
    { name: 'defect_count', type: 'int' },
    { name: 'cycle_time_ms', type: 'int' },
  ],
};
ok('machine event', machineEvent, {
  event_id: 'evt-000001', schema_version: 1, event_time: 1782720000000n, business_date: 20633,
  plant_id: 'plant-01', line_id: 'line-01', work_order_id: 'wo-000001', machine_id: 'm-1',
  product_code: 'prd-a', operation: 'assembly', units_produced: 10, defect_count: 1, cycle_time_ms: 1200,
});

// --- resolution
const v1 = { type: 'record', name: 'User', fields: [{ name: 'id', type: 'int' }, { name: 'name', type: 'string' }, { name: 'legacy', type: 'string' }] };
const v2 = {
  type: 'record', name: 'User', fields: [
    { name: 'id', type: 'long' },
    { name: 'full_name', type: 'string', aliases: ['name'] },
    { name: 'email', type: ['null', 'string'], default: null },
    { name: 'score', type: 'double', default: 1.5 },
    { name: 'roles', type: { type: 'array', items: 'string' }, default: ['user'] },
    { name: 'avatar', type: 'bytes', default: '\u00ff\u0000A' },
  ],
};
ok('added fields with defaults, a removed field, an alias, int to long', v1, { id: 7, name: 'Ann', legacy: 'x' }, v2);
const promo = (t) => ({ type: 'record', name: 'N', fields: [{ name: 'a', type: t }] });
ok('int to long', promo('int'), { a: -3 }, promo('long'));
ok('int to double', promo('int'), { a: 2147483647 }, promo('double'));
ok('long to double', promo('long'), { a: 9007199254740993n }, promo('double'));
ok('int to float', promo('int'), { a: 16777217 }, promo('float'));
ok('float to double', promo('float'), { a: Math.fround(0.1) }, promo('double'));
ok('string to bytes', promo('string'), { a: 'hé' }, promo('bytes'));
ok('bytes to string', promo('bytes'), { a: Buffer.from('hé') }, promo('string'));
ok('reordered fields', { type: 'record', name: 'R', fields: [{ name: 'b', type: 'string' }, { name: 'a', type: 'int' }, { name: 'c', type: 'boolean' }] },
  { b: 'bee', a: 1, c: true },
  { type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }, { name: 'x', type: 'int', default: 9 }, { name: 'b', type: 'string' }] });
const e1 = { type: 'enum', name: 'Level', symbols: ['LOW', 'MID', 'HIGH', 'EXTREME'] };
const e2 = { type: 'enum', name: 'Level', symbols: ['UNKNOWN', 'LOW', 'HIGH'], default: 'UNKNOWN' };
ok('enum symbol by name', e1, 'HIGH', e2);
ok('enum unknown symbol to the default', e1, 'EXTREME', e2);
ok('writer non-union to reader union', 'int', 5, ['null', 'string', 'long']);
ok('writer union to reader non-union', ['int', 'float'], { int: 5 }, 'double');
ok('writer union to reader union', ['int', 'string'], { string: 's' }, ['string', 'int', 'null']);
ok('record renamed with an alias', { type: 'record', name: 'Old', fields: [{ name: 'a', type: 'int' }] }, { a: 1 },
  { type: 'record', name: 'New', aliases: ['Old'], fields: [{ name: 'a', type: 'int' }] });
ok('a skipped field of every kind', {
  type: 'record', name: 'S', fields: [
    { name: 'skip_rec', type: nested.fields[1].type }, { name: 'skip_arr', type: { type: 'array', items: 'double' } },
    { name: 'skip_map', type: { type: 'map', values: ['null', 'string'] } }, { name: 'skip_fixed', type: { type: 'fixed', name: 'F2', size: 2 } },
    { name: 'skip_enum', type: color }, { name: 'keep', type: 'string' }, { name: 'skip_float', type: 'float' }],
}, {
  skip_rec: { name: 'n', vip: false }, skip_arr: [1.5, 2.5], skip_map: { k: { string: 'v' }, z: null }, skip_fixed: Buffer.from([1, 2]),
  skip_enum: 'GREEN', keep: 'kept', skip_float: 1,
}, { type: 'record', name: 'S', fields: [{ name: 'keep', type: 'string' }] });

// --- errors
const rec = { type: 'record', name: 'E', fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }, { name: 'tags', type: { type: 'array', items: 'string' } }] };
const full = typeOf(rec).toBuffer({ id: 300n, name: 'abc', tags: ['x', 'yz'] }).toString('hex');
// full: 'd804' id, '06616263' name, '04' 2 items, '0278' 'x', '04797a' 'yz', '00' end
bad('truncated: empty value', rec, '', '22P02', 'field "id" at byte 0: the data ends inside a number', { avscRejects: true });
bad('truncated: inside the varint', rec, full.slice(0, 2), '22P02', 'field "id" at byte 0: the data ends inside a number', { avscRejects: true });
bad('truncated: inside a string', rec, full.slice(0, 10), '22P02', 'field "name" at byte 2: a length beyond the end of the data', { avscRejects: true });
bad('truncated: inside an array', rec, full.slice(0, 18), '22P02', 'field "tags[1]" at byte 9: the data ends inside a number', { avscRejects: true });
bad('truncated: inside an array item', rec, full.slice(0, 22), '22P02', 'field "tags[1]" at byte 9: a length beyond the end of the data', { avscRejects: true });
bad('truncated: before the array ends', rec, full.slice(0, full.length - 2), '22P02', 'field "tags[2]" at byte 12: the data ends inside a number', { avscRejects: true });
bad('trailing bytes', rec, full + '00', '22P02', 'at byte 13: bytes left after the end of the datum');
bad('a varint of 11 bytes', 'long', 'ffffffffffffffffffff01', '22P02', 'at byte 0: a variable-length number longer than 10 bytes or 64 bits');
bad('a varint of 10 bytes beyond 64 bits', 'long', 'ffffffffffffffffff7f', '22P02', 'at byte 0: a variable-length number longer than 10 bytes or 64 bits');
bad('an int beyond 32 bits', 'int', '8080808010', '22P02', 'at byte 0: an int beyond 32 bits');
bad('a negative length', rec, 'd80401', '22P02', 'field "name" at byte 2: a negative length');
bad('a huge length', 'string', 'feffffffffffffffff01', '22P02', 'at byte 0: a length beyond the end of the data');
bad('a block count larger than the bytes', { type: 'array', items: 'string' }, 'e8070000', '22P02', 'at byte 0: a block count larger than the bytes left');
bad('the most negative block count', { type: 'array', items: 'long' }, 'ffffffffffffffffff0100', '22P02', 'at byte 0: a block count out of range');
bad('a huge negative block count', { type: 'array', items: 'long' }, zz(-1000000000) + zz(2) + '0200', '22P02', 'at byte 0: a block count larger than the bytes left');
bad('a huge block count of empty records', { type: 'array', items: { type: 'record', name: 'Empty', fields: [] } }, zz(4000000000000000000n) + '00', '22P02', 'the decoded value exceeds the size limit');
bad('a block size beyond the data', { type: 'array', items: 'long' }, '03c8010200', '22P02', 'at byte 1: a block size beyond the end of the data');
bad('a map key count beyond the data', { type: 'map', values: 'null' }, 'c8010000', '22P02', 'a block count larger than the bytes left');
bad('invalid UTF-8', rec, 'd80406616263'.slice(0, 6) + '06' + 'ff6162' + '00', '22P02', 'field "name" at byte 2: a string that is not valid UTF-8');
bad('an overlong UTF-8 sequence', 'string', '04c0af', '22P02', 'at byte 0: a string that is not valid UTF-8');
bad('a union branch out of range', ['null', 'string'], '04', '22P02', 'at byte 0: a union branch index out of range', { avscRejects: true });
bad('an enum index out of range', color, '06', '22P02', 'at byte 0: an enum index out of range', { avscRejects: true });
bad('a boolean byte of 2', 'boolean', '02', '22P02', 'at byte 0: a boolean byte other than 0 and 1');
bad('a decimal beyond its precision', dec(3, 1), '0403e8', '22P02', 'a decimal with more digits than its precision');
bad('a date beyond year 9999', { type: 'int', logicalType: 'date' }, 'feffffff0f', '22P02', 'a date outside the years 1 to 9999');
bad('a timestamp before year 1', { type: 'long', logicalType: 'timestamp-micros' }, 'ffffffffffffffffff01', '22P02', 'a timestamp outside the years 1 to 9999');
bad('a time of day of 24:00', { type: 'int', logicalType: 'time-millis' }, '80b0b35201', '22P02', 'a time of day outside 00:00 to 24:00');
bad('an enum symbol the reader lacks, no default', e1, '06', '22P02', 'a symbol the reader\'s enum lacks',
  { reader: { type: 'enum', name: 'Level', symbols: ['LOW', 'MID', 'HIGH'] } });
bad('a writer union branch the reader cannot read', ['int', 'string'], '0206616263', '22P02', 'the writer\'s union branch "string" cannot be read',
  { reader: 'long' });
const deep = { type: 'record', name: 'D', fields: [{ name: 'd', type: ['null', 'D'] }] };
bad('nested deeper than 32 levels', deep, '02'.repeat(40) + '00', '22P02', 'nested deeper than 32 levels');
bad('unresolvable: a reader field without default', v1, '02', '42804', 'field "nickname": the reader\'s field has no default',
  { reader: { type: 'record', name: 'User', fields: [{ name: 'id', type: 'int' }, { name: 'nickname', type: 'string' }] } });
bad('unresolvable: types that do not promote', promo('long'), '02', '42804', 'field "a": the writer\'s "long" cannot be read as the reader\'s "int"',
  { reader: promo('int') });
bad('unresolvable: records of other names', promo('int'), '02', '42804', 'have different names',
  { reader: { type: 'record', name: 'Other', fields: [{ name: 'a', type: 'int' }] } });
bad('bad schema: an unknown type', { type: 'record', name: 'R', fields: [{ name: 'a', type: 'integer' }] }, '02', '42P17', 'invalid Avro schema at $.fields[0].type: unknown type "integer"');
bad('bad schema: a default of the wrong type', { type: 'record', name: 'R', fields: [{ name: 'a', type: 'int', default: 'x' }] }, '02', '42P17', 'invalid Avro schema at $.fields[0].default');
bad('bad schema: a name defined twice', ['null', { type: 'fixed', name: 'f', size: 1 }, { type: 'enum', name: 'f', symbols: ['A'] }], '00', '42P17', 'type "f" is defined twice');
bad('bad schema: no fields', { type: 'record', name: 'R' }, '00', '42P17', 'invalid Avro schema at $: a record needs "fields"');
bad('bad schema: a union in a union', ['null', ['int', 'string']], '00', '42P17', 'invalid Avro schema at $[1]: a union cannot hold a union');
bad('bad schema: an enum default that is no symbol', { type: 'enum', name: 'E', symbols: ['A'], default: 'B' }, '00', '42P17', 'invalid Avro schema at $.default: default "B" is not a symbol of the enum');
// the Confluent framing
bad('framed: an unknown magic byte', 'string', '0200000001066162', '22P02', 'unknown magic byte', { framed: true });
bad('framed: a short schema id', 'string', '000000', '22P02', 'the value ends inside its 4-byte schema id', { framed: true });
cases.push({ name: 'framed: magic byte 0 and a schema id', writer: 'string', reader: null, hex: '00000001c8' + '06616263', expected: '"abc"', schema_id: 456, framed: true, sqlstate: null, error: null });
cases.push({ name: 'framed: magic byte 1 and a schema GUID', writer: 'string', reader: null, hex: '01' + '6f1c2b9e3a1d4c5e9f001a2b3c4d5e6f' + '0278', expected: '"x"', schema_guid: '6f1c2b9e-3a1d-4c5e-9f00-1a2b3c4d5e6f', framed: true, sqlstate: null, error: null });

// the writer (and reader) schemas as JSON text (a string schema is its name; invalid JSON as it is)
const text = cases.map((c) => JSON.stringify({
  ...c,
  writer: typeof c.writer === 'string' && c.writer.startsWith('{') ? c.writer : JSON.stringify(c.writer),
  reader: c.reader === null ? null : JSON.stringify(c.reader),
}, (k, v) => (typeof v === 'bigint' ? Number(v) : v))).join('\n') + '\n';

const out = path.join(__dirname, '..', 'fixtures', 'avro', 'cases.jsonl');
if (process.argv.includes('--check')) {
  const now = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
  if (now !== text) {
    console.error(`${out} differs from what avsc makes now: run node test/avro/generate.js`);
    process.exit(1);
  }
  console.log(`${cases.length} cases, as committed`);
} else {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, text);
  console.log(`${cases.length} cases written to ${out}`);
}
