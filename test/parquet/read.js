#!/usr/bin/env node
// Reads Parquet files with two independent readers, DuckDB and hyparquet,
// and prints their rows as canonical text (see canonical.js and README.md).
//
//   node read.js rows --reader duckdb|hyparquet FILE...
//   node read.js meta FILE
//   node read.js sql [--header] "SQL"
//
// Exit status: 0 on success, 1 when a reader fails (its error on stderr),
// 2 on a usage error.

import fs from 'node:fs';
import { formatValue, decodeUtf8 } from './canonical.js';

const USAGE = `usage: node read.js rows --reader duckdb|hyparquet FILE...
       node read.js meta FILE
       node read.js sql [--header] "SQL"`;

class UsageError extends Error {}

// ---- output ---------------------------------------------------------------

let pending = [];
let pendingBytes = 0;

process.stdout.on('error', e => {
	if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
	throw e;
});

async function flush() {
	if (!pending.length) return;
	const s = pending.join('');
	pending = [];
	pendingBytes = 0;
	if (!process.stdout.write(s)) await new Promise(r => process.stdout.once('drain', r));
}

async function emit(line) {
	pending.push(line, '\n');
	pendingBytes += line.length + 1;
	if (pendingBytes >= 1 << 20) await flush();
}

// Every file after the first must have the first one's column names.
function checkHeader(state, file, names) {
	if (!state.header) {
		state.header = names;
		return JSON.stringify(names);
	}
	if (JSON.stringify(names) !== JSON.stringify(state.header))
		throw new Error(`${file}: columns ${JSON.stringify(names)} differ from the first file's ${JSON.stringify(state.header)}`);
	return null;
}

// ---- DuckDB ---------------------------------------------------------------

let duck = null;

async function duckConnection() {
	if (duck) return duck.connection;
	const { DuckDBInstance } = await import('@duckdb/node-api');
	const instance = await DuckDBInstance.create(':memory:');
	const connection = await instance.connect();
	// everything it needs (parquet, json, icu) is built in; never reach out
	await connection.run("SET autoinstall_known_extensions = false; SET TimeZone = 'UTC'");
	duck = { instance, connection };
	return connection;
}

function duckClose() {
	if (!duck) return;
	duck.connection.closeSync();
	duck.instance.closeSync();
	duck = null;
}

// The kind of a DuckDB result column and a function from its DuckDBValue to
// the exact primitive canonical.js formats, or null when it has no
// canonical form.
function duckKind(type, T) {
	const id = type.typeId;
	switch (id) {
	case T.BOOLEAN: return [{ k: 'bool' }, v => v];
	case T.TINYINT: case T.SMALLINT: case T.INTEGER: case T.BIGINT: case T.HUGEINT:
	case T.UTINYINT: case T.USMALLINT: case T.UINTEGER: case T.UBIGINT: case T.UHUGEINT:
		return [{ k: 'int' }, v => v];
	case T.FLOAT: case T.DOUBLE: return [{ k: 'float' }, v => v];
	case T.VARCHAR: case T.ENUM: return [{ k: 'string' }, v => String(v)];
	case T.BLOB: return [{ k: 'bytes' }, v => v.bytes];
	case T.UUID: return [{ k: 'uuid' }, v => v.toUint128()];
	case T.DECIMAL: return [{ k: 'decimal', scale: type.scale }, v => v.value];
	case T.DATE: return [{ k: 'date' }, v => v.days];
	case T.TIMESTAMP: return [{ k: 'timestamp', unit: 'MICROS', utc: false }, v => v.micros];
	case T.TIMESTAMP_TZ: return [{ k: 'timestamp', unit: 'MICROS', utc: true }, v => v.micros];
	case T.TIMESTAMP_MS: return [{ k: 'timestamp', unit: 'MILLIS', utc: false }, v => v.millis];
	case T.TIMESTAMP_NS: return [{ k: 'timestamp', unit: 'NANOS', utc: false }, v => v.nanos];
	case T.TIMESTAMP_S: return [{ k: 'timestamp', unit: 'MICROS', utc: false }, v => v.seconds * 1000000n];
	default: return null;
	}
}

// Streams the rows of one query as arrays of canonical text. `strict`: a
// column type without a canonical form is an error (else its DuckDB text).
// `textColumns`: the names of BLOB columns that hold UTF-8 text.
async function* duckRows(sql, strict, onNames, textColumns = new Set()) {
	const { DuckDBTypeId } = await import('@duckdb/node-api');
	const c = await duckConnection();
	const result = await c.stream(sql);
	const names = result.columnNames();
	const types = result.columnTypes();
	const conv = types.map((t, i) => {
		const kc = textColumns.has(names[i]) && t.typeId === DuckDBTypeId.BLOB
			? [{ k: 'string' }, v => v.bytes]
			: duckKind(t, DuckDBTypeId);
		if (kc) return v => (v === null ? null : formatValue(kc[0], kc[1](v)));
		if (strict) throw new Error(`column ${JSON.stringify(names[i])}: type ${t} is not supported`);
		return v => (v === null ? null : String(v));
	});
	onNames(names);
	for (;;) {
		const chunk = await result.fetchChunk();
		if (!chunk || chunk.rowCount === 0) break;
		for (const row of chunk.getRows()) yield row.map((v, i) => conv[i](v));
	}
}

// A FILE must be a readable regular file: DuckDB would read a directory
// as all the files in it and a path with glob characters as a pattern.
function checkFile(file, duckdb) {
	const st = fs.statSync(file);
	if (!st.isFile()) throw new Error(`${file}: not a regular file`);
	fs.accessSync(file, fs.constants.R_OK);
	if (duckdb && /[*?[\]{}]/.test(file)) throw new Error(`${file}: glob characters in a file name are not supported`);
}

const sqlString = s => `'${s.replace(/'/g, "''")}'`;
const sqlName = s => `"${s.replace(/"/g, '""')}"`;

async function duckFileRows(file, state) {
	const { DuckDBTypeId: T } = await import('@duckdb/node-api');
	checkFile(file, true);
	// hive_partitioning off: a path holding business_date=... must not grow
	// a column; rows keep the file's order (preserve_insertion_order)
	const from = `FROM read_parquet(${sqlString(file)}, hive_partitioning = false)`;
	// Text columns come out as their UTF-8 bytes (encode()): the Node API's
	// own VARCHAR decoding drops a leading U+FEFF.
	const probe = await (await duckConnection()).stream(`SELECT * ${from} LIMIT 0`);
	const names = probe.columnNames();
	const types = probe.columnTypes();
	const text = new Set();
	const list = names.map((n, i) => {
		if (types[i].typeId !== T.VARCHAR && types[i].typeId !== T.ENUM) return sqlName(n);
		text.add(n);
		return `encode(CAST(${sqlName(n)} AS VARCHAR)) AS ${sqlName(n)}`;
	});
	let header = null;
	const gen = duckRows(`SELECT ${list.join(', ') || '*'} ${from}`, true,
		got => { header = checkHeader(state, file, got); }, text);
	const first = await gen.next();
	if (header) await emit(header);
	if (first.done) return;
	await emit(JSON.stringify(first.value));
	for await (const row of gen) await emit(JSON.stringify(row));
}

// ---- hyparquet ------------------------------------------------------------

// The kind of a hyparquet schema leaf, from its physical type and
// annotations (logical type first, converted type otherwise).
function hyKind(el) {
	const lt = el.logical_type?.type;
	const ct = el.converted_type;
	const name = JSON.stringify(el.name);
	if (lt === 'DECIMAL' || ct === 'DECIMAL') {
		const scale = el.logical_type?.scale ?? el.scale ?? 0;
		return { k: 'decimal', scale };
	}
	switch (el.type) {
	case 'BOOLEAN': return { k: 'bool' };
	case 'FLOAT': case 'DOUBLE': return { k: 'float' };
	case 'INT32': case 'INT64':
		if (lt === 'DATE' || ct === 'DATE') return { k: 'date' };
		if (lt === 'TIMESTAMP')
			return { k: 'timestamp', unit: el.logical_type.unit, utc: !!el.logical_type.isAdjustedToUTC };
		// the converted types alone mean "adjusted to UTC"
		if (ct === 'TIMESTAMP_MICROS') return { k: 'timestamp', unit: 'MICROS', utc: true };
		if (ct === 'TIMESTAMP_MILLIS') return { k: 'timestamp', unit: 'MILLIS', utc: true };
		if (lt === 'TIME' || ct === 'TIME_MILLIS' || ct === 'TIME_MICROS')
			throw new Error(`column ${name}: TIME is not supported`);
		return { k: 'int' };
	case 'BYTE_ARRAY':
		if (lt === 'STRING' || lt === 'JSON' || lt === 'ENUM' || ct === 'UTF8' || ct === 'JSON' || ct === 'ENUM')
			return { k: 'string' };
		if (lt || ct) throw new Error(`column ${name}: BYTE_ARRAY ${lt || ct} is not supported`);
		return { k: 'bytes' };
	case 'FIXED_LEN_BYTE_ARRAY':
		if (lt === 'UUID') return { k: 'uuid' };
		if (lt === 'FLOAT16') return { k: 'float' };
		if (lt || ct) throw new Error(`column ${name}: FIXED_LEN_BYTE_ARRAY ${lt || ct} is not supported`);
		return { k: 'bytes' };
	default:
		throw new Error(`column ${name}: physical type ${el.type} is not supported`);
	}
}

// hyparquet turns DECIMAL into a JavaScript number (inexact past 2^53) and
// DATE/TIMESTAMP into Date objects (millisecond precision): its parsers are
// replaced by ones that keep the stored integers, DECIMAL annotations are
// taken off the schema handed to it so that it passes the unscaled integers
// (or big-endian bytes) through, and `utf8: false` leaves unannotated
// BYTE_ARRAY as bytes.
const hyParsers = {
	timestampFromMilliseconds: v => v,
	timestampFromMicroseconds: v => v,
	timestampFromNanoseconds: v => v,
	dateFromDays: v => v,
	stringFromBytes: b => (b === undefined || b === null ? b : decodeUtf8(b)),
	jsonFromBytes: b => (b === undefined || b === null ? b : decodeUtf8(b)),
	uuidFromBytes: b => b,
};

async function hyFileRows(file, state) {
	checkFile(file, false);
	const hp = await import('hyparquet');
	const { compressors } = await import('hyparquet-compressors');
	const buf = await hp.asyncBufferFromFile(file);
	// (its default parsers here: it decodes every BYTE_ARRAY min/max
	// statistic as text, bytea or not, and rows do not need them)
	const metadata = await hp.parquetMetadataAsync(buf, { geoparquet: false });
	const root = hp.parquetSchema(metadata);
	const names = [];
	const kinds = [];
	for (const child of root.children) {
		const el = child.element;
		if (child.children.length || el.num_children)
			throw new Error(`column ${JSON.stringify(el.name)}: nested types are not supported`);
		if (el.repetition_type === 'REPEATED')
			throw new Error(`column ${JSON.stringify(el.name)}: repeated fields are not supported`);
		names.push(el.name);
		kinds.push(hyKind(el));
	}
	for (const el of metadata.schema) {
		if (el.converted_type === 'DECIMAL') delete el.converted_type;
		if (el.logical_type?.type === 'DECIMAL') delete el.logical_type;
	}
	const header = checkHeader(state, file, names);
	if (header) await emit(header);
	let rowStart = 0;
	for (const rg of metadata.row_groups) {
		const rowEnd = rowStart + Number(rg.num_rows);
		if (rowEnd === rowStart) continue;
		let rows;
		await hp.parquetRead({
			file: buf, metadata, compressors, parsers: hyParsers, utf8: false, geoparquet: false,
			rowStart, rowEnd, rowFormat: 'array',
			onComplete: r => { rows = r; },
		});
		if (rows.length !== rowEnd - rowStart)
			throw new Error(`${file}: row group gave ${rows.length} rows, expected ${rowEnd - rowStart}`);
		for (const row of rows) await emit(JSON.stringify(row.map((v, i) => formatValue(kinds[i], v))));
		rowStart = rowEnd;
	}
	if (rowStart !== Number(metadata.num_rows))
		throw new Error(`${file}: row groups hold ${rowStart} rows, the footer says ${metadata.num_rows}`);
}

// ---- meta -----------------------------------------------------------------

const SCHEMA_COLUMNS = ['name', 'type', 'type_length', 'repetition_type', 'num_children', 'converted_type',
	'logical_type', 'scale', 'precision', 'field_id', 'duckdb_type'];
const METADATA_COLUMNS = ['row_group_id', 'row_group_num_rows', 'row_group_num_columns', 'row_group_bytes',
	'column_id', 'path_in_schema', 'type', 'num_values', 'compression', 'encodings',
	'stats_min', 'stats_max', 'stats_min_value', 'stats_max_value', 'stats_null_count', 'stats_distinct_count',
	'min_is_exact', 'max_is_exact', 'dictionary_page_offset', 'data_page_offset',
	'total_compressed_size', 'total_uncompressed_size'];
const FILE_COLUMNS = ['num_rows', 'num_row_groups', 'format_version', 'created_by', 'encryption_algorithm',
	'footer_signing_key_metadata'];

// Plain JSON of a DuckDB value: integers as numbers (as strings past 2^53),
// BLOBs as UTF-8 text when they are, else "\x..." hex.
function jsonValue(v) {
	if (v === null || v === undefined) return null;
	if (typeof v === 'bigint') return v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v.toString();
	if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
	if (v.bytes instanceof Uint8Array) {
		try { return decodeUtf8(v.bytes); } catch { return formatValue({ k: 'bytes' }, v.bytes); }
	}
	if (Array.isArray(v.items)) return v.items.map(jsonValue);
	if (Array.isArray(v.entries)) return Object.fromEntries(v.entries.map(e => [e.name ?? e.key, jsonValue(e.value)]));
	return String(v);
}

async function duckObjects(fn, file, wanted, order) {
	const c = await duckConnection();
	const have = (await c.runAndReadAll(`DESCRIBE SELECT * FROM ${fn}(${sqlString(file)})`)).getRows().map(r => r[0]);
	const cols = wanted.filter(w => have.includes(w));
	const sql = `SELECT ${cols.map(x => `"${x}"`).join(', ')} FROM ${fn}(${sqlString(file)})${order ? ` ORDER BY ${order}` : ''}`;
	const rows = (await c.runAndReadAll(sql)).getRows();
	return rows.map(r => Object.fromEntries(r.map((v, i) => [cols[i], jsonValue(v)])));
}

async function meta(file) {
	checkFile(file, true);
	const fileMeta = (await duckObjects('parquet_file_metadata', file, FILE_COLUMNS))[0];
	const out = {
		file,
		num_rows: fileMeta.num_rows,
		file_metadata: fileMeta,
		kv_metadata: await duckObjects('parquet_kv_metadata', file, ['key', 'value']),
		schema: await duckObjects('parquet_schema', file, SCHEMA_COLUMNS),
		metadata: await duckObjects('parquet_metadata', file, METADATA_COLUMNS, 'row_group_id, column_id'),
	};
	await emit(JSON.stringify(out, null, 2));
}

// ---- sql ------------------------------------------------------------------

async function sql(text, header) {
	const gen = duckRows(text, false, names => { if (header) pending.push(JSON.stringify(names), '\n'); });
	for await (const row of gen) await emit(JSON.stringify(row));
}

// ---- main -----------------------------------------------------------------

async function main(argv) {
	const cmd = argv[0];
	if (cmd === 'rows') {
		let reader = null;
		const files = [];
		for (let i = 1; i < argv.length; i++) {
			if (argv[i] === '--reader') reader = argv[++i];
			else if (argv[i].startsWith('--reader=')) reader = argv[i].slice(9);
			else if (argv[i] === '--') files.push(...argv.slice(i + 1)), i = argv.length;
			else files.push(argv[i]);
		}
		if (reader !== 'duckdb' && reader !== 'hyparquet') throw new UsageError('--reader duckdb|hyparquet is required');
		if (!files.length) throw new UsageError('no FILE given');
		const state = { header: null };
		for (const f of files) await (reader === 'duckdb' ? duckFileRows(f, state) : hyFileRows(f, state));
	} else if (cmd === 'meta') {
		if (argv.length !== 2) throw new UsageError('meta takes one FILE');
		await meta(argv[1]);
	} else if (cmd === 'sql') {
		const args = argv.slice(1);
		const header = args[0] === '--header';
		if (header) args.shift();
		if (args.length !== 1) throw new UsageError('sql takes one SQL statement');
		await sql(args[0], header);
	} else {
		throw new UsageError(cmd ? `unknown command ${cmd}` : 'no command');
	}
	await flush();
}

try {
	await main(process.argv.slice(2));
	duckClose();
} catch (e) {
	if (e instanceof UsageError) {
		process.stderr.write(`read.js: ${e.message}\n${USAGE}\n`);
		process.exitCode = 2;
	} else {
		await flush().catch(() => {});
		process.stderr.write(`read.js: ${e && e.message ? e.message : e}\n`);
		process.exitCode = 1;
	}
}
