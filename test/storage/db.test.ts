import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { isDatabaseUnavailable, isUniqueViolation } from '../../src/database-errors.ts';
import { isDriverWriteDefect, isPoolBroken, openDatabase, type Database } from '../../src/storage/db.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { waitUntil } from '../helpers/wait.ts';

describe('openDatabase', () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  const transitions: string[] = [];
  before(async () => {
    test = await createTestDatabase();
    database = openDatabase(test.url, { onDown: () => transitions.push('down'), onUp: () => transitions.push('up') });
  });
  after(async () => {
    await database.end();
    await test.drop();
  });

  it('forwards tagged queries, helpers and transactions to the pool', async () => {
    const { sql } = database;
    assert.deepEqual([...(await sql`SELECT ${41}::int + 1 AS n`)], [{ n: 42 }]);
    assert.equal(await sql.begin(async (tx) => (await tx`SELECT 'in a transaction' AS s`)[0]!.s), 'in a transaction');
    assert.deepEqual([...(await sql.unsafe('SELECT 1 AS one; SELECT 2 AS two'))].length, 2);
    assert.equal(typeof sql.options, 'object');
  });

  it('opens the breaker on an unreachable database: queries fail at once, a probe brings a fresh pool', async () => {
    const { sql } = database;
    const [before] = await sql`SELECT pg_backend_pid() AS pid`;
    database.noteFailure(new Error('a query error is not an outage'));
    assert.equal(database.isUp(), true);
    database.noteFailure({ code: 'ECONNREFUSED' });
    assert.equal(database.isUp(), false);
    assert.deepEqual(transitions, ['down']);
    const started = performance.now();
    await assert.rejects(async () => sql`SELECT 1`, (error: { code?: string }) => error.code === 'DATABASE_DOWN' && isDatabaseUnavailable(error));
    await assert.rejects(async () => sql.begin(async () => 1), (error: { code?: string }) => error.code === 'DATABASE_DOWN');
    // A liveness bound with a wide margin: touching the network would wait for the 2 s connect timeout.
    assert.ok(performance.now() - started < 1_000, 'at once, without touching the network');
    const fragment = sql`SELECT 1`;
    void fragment;
    assert.equal(typeof sql.options, 'object', 'other properties still answer');

    await waitUntil(async () => database.isUp());
    assert.deepEqual(transitions, ['down', 'up']);
    const [after] = await sql`SELECT pg_backend_pid() AS pid`;
    assert.notEqual(after!.pid, before!.pid, 'a new pool answers');
    database.noteFailure({ code: 'CONNECT_TIMEOUT' });
    assert.equal(database.isUp(), false, 'a connection left broken by the driver opens it too');
    await waitUntil(async () => database.isUp());
  });
});

describe('pool renewal (the driver queue defect, db.ts)', () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  let admin: Database;
  before(async () => {
    test = await createTestDatabase();
    admin = openDatabase(test.url, { applicationName: 'renewal-admin' });
    await admin.sql`CREATE UNLOGGED TABLE renewal_log (n int PRIMARY KEY, pid int NOT NULL)`;
  });
  after(async () => {
    await admin.end();
    await test.drop();
  });
  const connectionsOf = async (applicationName: string) =>
    Number((await admin.sql`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = ${applicationName}`)[0]!.n);

  it('is still needed: the installed driver is the one whose queue has the defect', async () => {
    // When this fails, the driver has changed: run test/bench/driver-queue.ts against it, and if
    // its rate holds, drop the renewal (db.ts) and the README's report; if not, update the version.
    const installed = JSON.parse(await readFile(new URL('../../node_modules/postgres/package.json', import.meta.url), 'utf8'));
    assert.equal(installed.version, '3.4.9');
  });

  it('renews the pool every queriesPerPool queries without losing, repeating or cutting a query', async () => {
    let renewals = 0;
    const applicationName = 'renewal-queries';
    const database = openDatabase(test.url, { applicationName, queriesPerPool: 250, onRenew: () => (renewals += 1) });
    const count = 5_000;
    let next = 0;
    const answered: number[] = [];
    // 50 loops on a pool of 10, as in the reproduction: the busy queue never drains.
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let n = next++; n < count; n = next++) {
          const [row] = await database.sql`INSERT INTO renewal_log (n, pid) VALUES (${n}, pg_backend_pid()) RETURNING n`;
          answered.push(row!.n as number);
        }
      }),
    );
    assert.equal(answered.length, count, 'every query answered once');
    assert.equal(new Set(answered).size, count, 'no query answered twice');
    const [stored] = await admin.sql`SELECT count(*)::int AS rows, count(DISTINCT n)::int AS distinct_rows, count(DISTINCT pid)::int AS backends FROM renewal_log`;
    assert.equal(stored!.rows, count, 'every insert stored once');
    assert.equal(stored!.distinct_rows, count);
    assert.ok(stored!.backends > 10, `served by ${stored!.backends} backends, more than one pool of 10`);
    // A renewal switches once the next pool's connections are open, so a cycle takes its 250
    // queries and those made while the ten connections open.
    await waitUntil(async () => renewals >= 5);
    // The renewed pools close: what stays open is at most one pool.
    await waitUntil(async () => (await connectionsOf(applicationName)) <= 10);
    await database.end();
    await waitUntil(async () => (await connectionsOf(applicationName)) === 0);
  });

  it('lets a transaction that was open when its pool was renewed finish on its one connection', async () => {
    let renewals = 0;
    const database = openDatabase(test.url, { applicationName: 'renewal-transaction', queriesPerPool: 10, onRenew: () => (renewals += 1) });
    let renewed!: () => void;
    const renewedWhileOpen = new Promise<void>((resolve) => (renewed = resolve));
    const transaction = database.sql.begin(async (tx) => {
      const [first] = await tx`INSERT INTO renewal_log (n, pid) VALUES (-1, pg_backend_pid()) RETURNING pid`;
      await renewedWhileOpen;
      const [second] = await tx`INSERT INTO renewal_log (n, pid) VALUES (-2, pg_backend_pid()) RETURNING pid`;
      return [first!.pid, second!.pid];
    });
    // Queries on the handle until the pool of the transaction has been renewed and told to end.
    while (renewals === 0) await database.sql`SELECT 1`;
    renewed();
    const [firstPid, secondPid] = await transaction;
    assert.equal(secondPid, firstPid, 'both statements on the one connection');
    const rows = await admin.sql`SELECT n FROM renewal_log WHERE n < 0 ORDER BY n`;
    assert.deepEqual(rows.map((row) => row.n), [-2, -1], 'committed whole');
    assert.deepEqual([...(await database.sql`SELECT 2 AS two`)], [{ two: 2 }], 'the renewed pool answers');
    await database.end();
  });
});

describe('error classification', () => {
  it('recognises only the driver defect of writing to a closed connection', () => {
    const defect = new TypeError("Cannot read properties of null (reading 'write')");
    defect.stack = `${defect.message}\n    at Immediate.nextWrite (file:///app/node_modules/postgres/src/connection.js:255:22)\n    at process.processImmediate (node:internal/timers:483:21)`;
    assert.equal(isDriverWriteDefect(defect), true);
    const elsewhere = new TypeError("Cannot read properties of null (reading 'write')");
    elsewhere.stack = `${elsewhere.message}\n    at nextWrite (file:///app/src/mine.js:1:1)`;
    assert.equal(isDriverWriteDefect(elsewhere), false);
    assert.equal(isDriverWriteDefect(new Error("Cannot read properties of null (reading 'write')")), false);
    assert.equal(isDriverWriteDefect('text'), false);
    assert.equal(isPoolBroken(defect), true);
    assert.equal(isPoolBroken({ code: 'CONNECT_TIMEOUT' }), true);
    assert.equal(isPoolBroken({ code: 'ECONNREFUSED' }), false);
  });

  it('tells an unreachable database from a bad query', () => {
    for (const code of ['ECONNREFUSED', 'CONNECTION_CLOSED', 'CONNECT_TIMEOUT', '57P01', '08006']) assert.equal(isDatabaseUnavailable({ code }), true, code);
    for (const value of [{ code: '23505' }, { code: 42 }, null, new Error('x')]) assert.equal(isDatabaseUnavailable(value), false);
  });

  it('names the index of a unique violation', () => {
    assert.equal(isUniqueViolation({ code: '23505', constraint_name: 'accounts_name_key' }, 'accounts_name_key'), true);
    assert.equal(isUniqueViolation({ code: '23505', constraint_name: 'other' }, 'accounts_name_key'), false);
    assert.equal(isUniqueViolation(null, 'accounts_name_key'), false);
  });
});
