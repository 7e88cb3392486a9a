// Canonical text of Parquet values, shared by both readers of read.js.
//
// Each reader decodes a file on its own (DuckDB in C++, hyparquet in
// JavaScript) down to exact primitive values (bigint unscaled decimals, days,
// microseconds, raw bytes); only the last step, turning those into text, is
// common, so that the two outputs can be compared byte for byte and both can
// be compared with PostgreSQL's rendering of the same rows.

const MICROS_PER_DAY = 86400000000n;
const INT32_MAX = 2147483647;
const INT64_MAX = 9223372036854775807n;

const pad = (n, w) => String(n).padStart(w, '0');

// Days since 1970-01-01 to proleptic Gregorian [year, month, day]
// (H. Hinnant's civil_from_days).
function civil(days) {
	const z = days + 719468;
	const era = Math.floor(z / 146097);
	const doe = z - era * 146097;
	const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
	const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
	const mp = Math.floor((5 * doy + 2) / 153);
	const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
	const m = mp < 10 ? mp + 3 : mp - 9;
	return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

// "YYYY-MM-DD"; years before 1 as PostgreSQL writes them ("0044-03-15 BC"
// is day 1 - 44 = -43), returned as [text, bcSuffix].
function ymd(days) {
	const [y, m, d] = civil(days);
	if (y >= 1) return [`${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`, ''];
	return [`${pad(1 - y, 4)}-${pad(m, 2)}-${pad(d, 2)}`, ' BC'];
}

// DATE: days since the epoch (a number). DuckDB's and PostgreSQL's infinite
// dates are stored as +/-(2^31-1).
export function formatDate(days) {
	days = Number(days);
	if (days === INT32_MAX) return 'infinity';
	if (days === -INT32_MAX) return '-infinity';
	const [t, bc] = ymd(days);
	return t + bc;
}

// TIMESTAMP: a bigint count of `unit` ('MILLIS', 'MICROS' or 'NANOS') since
// the epoch; "YYYY-MM-DDTHH:MM:SS.ffffff" (9 digits for NANOS), "Z" appended
// when the column is adjusted to UTC.
export function formatTimestamp(value, unit, utc) {
	let v = BigInt(value);
	if (v === INT64_MAX) return 'infinity';
	if (v === -INT64_MAX) return '-infinity';
	let perSec = 1000000n, digits = 6;
	if (unit === 'MILLIS') v *= 1000n;
	else if (unit === 'NANOS') { perSec = 1000000000n; digits = 9; }
	const perDay = perSec === 1000000n ? MICROS_PER_DAY : MICROS_PER_DAY * 1000n;
	let days = v / perDay;
	let rem = v % perDay;
	if (rem < 0n) { rem += perDay; days -= 1n; }
	const secs = rem / perSec;
	const frac = rem % perSec;
	const hh = secs / 3600n, mm = (secs / 60n) % 60n, ss = secs % 60n;
	const [t, bc] = ymd(Number(days));
	return `${t}T${pad(hh, 2)}:${pad(mm, 2)}:${pad(ss, 2)}.${pad(frac, digits)}${utc ? 'Z' : ''}${bc}`;
}

// DECIMAL: unscaled bigint and scale; trailing fractional zeros and a bare
// "." dropped ("1.50" -> "1.5", "2.00" -> "2").
export function formatDecimal(unscaled, scale) {
	const v = BigInt(unscaled);
	const neg = v < 0n;
	let s = (neg ? -v : v).toString();
	if (scale > 0) {
		s = s.padStart(scale + 1, '0');
		const int = s.slice(0, s.length - scale);
		const frac = s.slice(s.length - scale).replace(/0+$/, '');
		s = frac ? `${int}.${frac}` : int;
	} else if (scale < 0) {
		s = s === '0' ? s : s + '0'.repeat(-scale);
	}
	return (neg ? '-' : '') + s;
}

// Big-endian two's complement bytes (DECIMAL as FIXED_LEN_BYTE_ARRAY or
// BYTE_ARRAY) to a bigint.
export function bigintFromBytes(bytes) {
	if (!bytes.length) return 0n;
	let v = 0n;
	for (const b of bytes) v = (v << 8n) | BigInt(b);
	if (bytes[0] & 0x80) v -= 1n << BigInt(bytes.length * 8);
	return v;
}

function hexOf(bytes) {
	let s = '';
	for (const b of bytes) s += (b < 16 ? '0' : '') + b.toString(16);
	return s;
}

// BYTE_ARRAY without a string annotation, as PostgreSQL prints bytea.
export function formatBytes(bytes) {
	return '\\x' + hexOf(bytes);
}

// UUID from its 16 bytes, or from an unsigned 128-bit bigint.
export function formatUuid(v) {
	const h = typeof v === 'bigint' ? v.toString(16).padStart(32, '0') : hexOf(v);
	if (h.length !== 32) throw new Error(`UUID of ${h.length / 2} bytes`);
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// DOUBLE/FLOAT: JavaScript's shortest round-trip text of the double value
// ("NaN", "Infinity", "-Infinity"; -0 prints "0").
export function formatFloat(x) {
	return String(x);
}

// UTF-8 that is not valid is an error, and a leading U+FEFF is kept.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
export function decodeUtf8(bytes) {
	return utf8.decode(bytes);
}

// One value of a column of the given kind, or null. `kind` is one of:
// {k:'string'} {k:'bytes'} {k:'int'} {k:'bool'} {k:'float'} {k:'uuid'}
// {k:'decimal', scale} {k:'date'} {k:'timestamp', unit, utc}
export function formatValue(kind, v) {
	if (v === null || v === undefined) return null;
	switch (kind.k) {
	case 'string': return typeof v === 'string' ? v : decodeUtf8(v);
	case 'bytes': return formatBytes(v);
	case 'int': return typeof v === 'bigint' ? v.toString() : BigInt(v).toString();
	case 'bool': return v ? 'true' : 'false';
	case 'float': return formatFloat(v);
	case 'uuid': return formatUuid(v);
	case 'decimal': return formatDecimal(v instanceof Uint8Array ? bigintFromBytes(v) : v, kind.scale);
	case 'date': return formatDate(v);
	case 'timestamp': return formatTimestamp(v, kind.unit, kind.utc);
	default: throw new Error(`unknown kind ${kind.k}`);
	}
}
