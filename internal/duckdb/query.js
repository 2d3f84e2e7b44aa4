// query.js: run the SQL read from stdin in an in-memory DuckDB and print
// {"columns": [...], "rows": [{column: string}]} on stdout. argv[2] is the
// node_modules folder holding @duckdb/node-api. Values come from the
// API's JSON converter, which renders BIGINT, HUGEINT, DECIMAL and
// timestamps as exact strings; other non-string values (INTEGER, DOUBLE,
// BOOLEAN, lists, structs) are JSON text. NULLs are left out of the row.
'use strict';
const fs = require('fs');
const path = require('path');
const { DuckDBInstance } = require(path.join(process.argv[2], '@duckdb/node-api'));

async function main() {
  const sql = fs.readFileSync(0, 'utf8');
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const reader = await conn.runAndReadAll(sql);
    const rows = reader.getRowObjectsJson().map((r) => {
      const o = {};
      for (const [k, v] of Object.entries(r)) {
        if (v === null || v === undefined) continue;
        o[k] = typeof v === 'string' ? v : JSON.stringify(v);
      }
      return o;
    });
    process.stdout.write(JSON.stringify({ columns: reader.columnNames(), rows }));
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

main().catch((e) => {
  process.stderr.write(String((e && e.stack) || e) + '\n');
  process.exit(1);
});
