#!/usr/bin/env node
// DuckDB writes a CSV file (with a header line) as a ZSTD Parquet file, and
// prints the elapsed milliseconds of that COPY statement alone: the baseline
// that kafka_lake's own Parquet export is measured against.
//
//   node duck_write.js CSV OUT

import { DuckDBInstance } from '@duckdb/node-api';

const args = process.argv.slice(2);
if (args.length !== 2) {
	process.stderr.write('usage: node duck_write.js CSV OUT\n');
	process.exit(2);
}
const [csv, out] = args;
const lit = s => `'${s.replace(/'/g, "''")}'`;

try {
	const instance = await DuckDBInstance.create(':memory:');
	const connection = await instance.connect();
	await connection.run('SET autoinstall_known_extensions = false');
	const sql = `COPY (SELECT * FROM read_csv(${lit(csv)}, header = true)) TO ${lit(out)} (FORMAT parquet, COMPRESSION zstd)`;
	const t0 = process.hrtime.bigint();
	await connection.run(sql);
	const ns = process.hrtime.bigint() - t0;
	connection.closeSync();
	instance.closeSync();
	process.stdout.write(`${(Number(ns) / 1e6).toFixed(3)}\n`);
} catch (e) {
	process.stderr.write(`duck_write.js: ${e && e.message ? e.message : e}\n`);
	process.exitCode = 1;
}
