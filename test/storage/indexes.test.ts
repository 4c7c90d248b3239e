import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Sql } from '../../src/storage/db.ts';
import { createMigratedDatabase } from '../helpers/database.ts';

// A lookup that scans a table makes a request cost more as the table grows: the deletion once
// scanned the whole outbox, sent mail included. These hold the schema to finding by index.
let database: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sql: Sql;
before(async () => {
  database = await createMigratedDatabase();
  sql = database.sql;
});
after(() => database.drop());

/** The plan PostgreSQL would pick with table scans priced out: a scan there means no index can serve the statement. */
async function plan(statement: string, parameters: string[]): Promise<string> {
  return sql.begin(async (tx) => {
    await tx`SET LOCAL enable_seqscan = off`;
    const rows = await tx.unsafe(`EXPLAIN (COSTS OFF) ${statement}`, parameters);
    return rows.map((row) => row['QUERY PLAN'] as string).join('\n');
  });
}

describe('indexes', () => {
  it("the deletion finds the address's queued mail by index (outbox_recipient)", async () => {
    const shown = await plan('DELETE FROM outbox WHERE lower(recipient) = lower($1)', ['someone@example.com']);
    assert.match(shown, /outbox_recipient/, shown);
    assert.doesNotMatch(shown, /Seq Scan/, shown);
  });

  it('every foreign key has an index that starts with its columns, so that a cascade never scans', async () => {
    const unindexed = await sql`
      SELECT c.conrelid::regclass::text AS "table", c.conname AS "constraint"
      FROM pg_constraint c
      WHERE c.contype = 'f' AND NOT EXISTS (
        SELECT 1 FROM pg_index i
        WHERE i.indrelid = c.conrelid AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] = c.conkey
      )`;
    assert.deepEqual([...unindexed], []);
  });
});
