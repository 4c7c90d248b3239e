import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createKeyedHashes } from '../../src/core/keyed-hashes.ts';
import { clearThrottle, delaySeconds, rememberClient, settleSuccess } from '../../src/core/login-throttle.ts';
import { createMigratedDatabase } from '../helpers/database.ts';
import { waitUntil } from '../helpers/wait.ts';

describe('login throttle', () => {
  it('allows four failures, then doubles the wait from 1 s up to 15 minutes', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8].map(delaySeconds), [0, 0, 0, 0, 1, 2, 4, 8]);
    assert.equal(delaySeconds(14), 512);
    assert.equal(delaySeconds(15), 900);
    assert.equal(delaySeconds(1000), 900);
  });

  it('keys identifiers by a keyed hash of what was typed, ignoring case, with a key for each purpose', () => {
    const keysOf = (byte: number) => ({ address: Buffer.alloc(32, byte), loginIdentifier: Buffer.alloc(32, byte + 1), client: Buffer.alloc(32, byte + 2) });
    const keys = createKeyedHashes(keysOf(1));
    assert.equal(keys.loginIdentifier('Alice').length, 32);
    assert.deepEqual(keys.loginIdentifier('Alice'), keys.loginIdentifier('alice'));
    assert.notDeepEqual(keys.loginIdentifier('alice'), keys.address('alice'), 'another purpose, another key');
    assert.notDeepEqual(keys.loginIdentifier('alice'), createKeyedHashes(keysOf(7)).loginIdentifier('alice'), 'another key, another hash');
    assert.equal(keys.client('192.0.2.1').toString('latin1').includes('192.0.2.1'), false);
  });
});

describe("the throttle's rows and the lock order", () => {
  let database: Awaited<ReturnType<typeof createMigratedDatabase>>;
  before(async () => (database = await createMigratedDatabase()));
  after(() => database.drop());

  it("a right password's settlement waits for a reset that clears the same rows, and never deadlocks with it", async () => {
    const { sql } = database;
    const [name, email, client] = [1, 2, 3].map((byte) => Buffer.alloc(32, byte)) as [Buffer, Buffer, Buffer];
    const now = new Date();
    await sql`INSERT INTO login_budgets (identifier_key, tokens, updated_at) VALUES (${name}, 5, ${now})`;
    await sql`INSERT INTO login_delays (identifier_key, client_key, failures, updated_at) VALUES (${name}, ${client}, 3, ${now})`;
    let settled: Promise<void> | null = null;
    // The reset's transaction holds the delay row; the settlement starts and waits for a lock
    // (the barrier); then the reset goes on to the budget row. One statement that held the
    // budget row while it waited for the delay row ended in a deadlock here (40P01).
    await sql.begin(async (tx) => {
      await tx`DELETE FROM login_delays WHERE identifier_key = ${name}`;
      settled = settleSuccess(sql, { identifier: name, client }, 10, now, true);
      await waitUntil(async () => {
        const [row] = await sql`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
        return row!.n === 1;
      });
      await clearThrottle(tx, [name, email]);
      await rememberClient(tx, [name, email], client, now);
    });
    await settled;
    const known = await sql`SELECT identifier_key FROM login_known_clients ORDER BY identifier_key`;
    assert.deepEqual(known.map((row) => row.identifier_key), [name, email]);
  });
});
