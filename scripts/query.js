// query.js: runs the SQL read from stdin in an in-memory DuckDB and prints
// the rows as an aligned text table (numbers right-aligned, exact: DECIMAL
// and BIGINT are printed as DuckDB renders them). argv[2] is the
// node_modules folder holding @duckdb/node-api. Used by scripts/query.sh.
'use strict';
const fs = require('fs');
const path = require('path');
const { DuckDBInstance } = require(path.join(process.argv[2], '@duckdb/node-api'));

function cell(v) {
  if (v === null || v === undefined) return 'NULL';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

async function main() {
  const sql = fs.readFileSync(0, 'utf8');
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const reader = await conn.runAndReadAll(sql);
    const cols = reader.columnNames();
    const types = reader.columnTypes().map((t) => String(t));
    const numeric = types.map((t) => /^(DECIMAL|BIGINT|INTEGER|HUGEINT|SMALLINT|TINYINT|DOUBLE|FLOAT|UBIGINT|UINTEGER)/.test(t));
    const rows = reader.getRowsJson().map((r) => r.map(cell));
    const width = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i].length)));
    const line = (r) => r.map((v, i) => (numeric[i] ? v.padStart(width[i]) : v.padEnd(width[i]))).join('  ').trimEnd();
    const out = [line(cols), width.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
    out.push(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

main().catch((e) => {
  process.stderr.write('query: ' + String((e && e.message) || e) + '\n');
  process.exit(1);
});
