import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { canDumpSchema, dumpSchema, pgBin, schemaFile } from './tools/schema.ts';

describe('sql/schema.sql', () => {
  it('is what the migrations make: a migration without `npm run schema` after it fails here', { skip: canDumpSchema() ? false : `no PostgreSQL 15 in ${pgBin} (PG_BIN)` }, async () => {
    const made = await dumpSchema();
    const committed = await readFile(schemaFile, 'utf8');
    assert.ok(made === committed, 'sql/schema.sql differs from what the migrations make: run npm run schema and commit it');
  });
});
