import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { isDatabaseUnavailable, isUniqueViolation } from '../../src/storage/database-errors.ts';
import {
  answered, connectDatabase, isDriverWriteDefect, isPoolBroken, isUncaughtDriverDefect, openDatabase, type Database,
  type Sql, type Transaction,
} from '../../src/storage/db.ts';
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
  });

  it('refuses a statement of a transaction that has ended, which the driver would run outside it', async () => {
    const { sql } = database;
    const isClosed = (error: { code?: string }) => error.code === 'CONNECTION_CLOSED';
    let committed: Transaction | null = null;
    await sql.begin(async (tx) => {
      committed = tx;
      assert.equal((await tx`SELECT 1 AS one`)[0]!.one, 1, 'statements run while it lasts');
    });
    await assert.rejects(async () => committed!`SELECT 1`, isClosed);
    let failed: Transaction | null = null;
    await assert.rejects(sql.begin(async (tx) => {
      failed = tx;
      throw new Error('the transaction fails');
    }));
    await assert.rejects(async () => failed!`SELECT 1`, isClosed);
    assert.equal(typeof committed!({ a: 1 }), 'object', 'a helper builds nothing that runs, and stays allowed');
  });

  it('passes every answer the database gave, and refuses a result the driver settled without one', async () => {
    const { sql } = database;
    const rows = await sql`SELECT 1 AS one`;
    const none = await sql`SELECT 1 AS one WHERE false`;
    const both = await sql.unsafe('SELECT 1 AS one; SELECT 2 AS two WHERE false');
    await sql`CREATE TABLE answered_check (id int)`;
    const inserted = await sql`INSERT INTO answered_check VALUES (1)`;
    const deleted = await sql`DELETE FROM answered_check WHERE id = 2`;
    for (const result of [rows, none, both, inserted, deleted]) assert.equal(answered(result), result);
    assert.deepEqual([...none], [], 'no rows is an answer');
    const unanswered = (result: object) => () => answered(result);
    const isClosed = (error: { code?: string }) => error.code === 'CONNECTION_CLOSED' && isDatabaseUnavailable(error);
    // What the driver's ReadyForQuery hands a query it kept across a reconnection: its Result, never tagged.
    const never = await sql`SELECT 1 AS one WHERE false`;
    Object.assign(never, { command: null });
    assert.throws(unanswered(never), isClosed);
    const half = await sql.unsafe('SELECT 1 AS one; SELECT 2 AS two');
    Object.assign(half[1]!, { command: null });
    assert.throws(unanswered(half), isClosed);
    assert.equal(answered(42), 42, "a transaction's own value is not a result");
  });

  it('renews the pool, with no refusal, after a connection the driver left broken while the database answers', async () => {
    const { sql } = database;
    const pids = async () => new Set(await Promise.all(Array.from({ length: 30 }, async () => (await sql`SELECT pg_backend_pid() AS pid`)[0]!.pid as number)));
    const before = await pids();
    // A connection attempt over its time, as the driver's stale write buffer causes, or as a busy machine can.
    const noted = performance.now();
    const renewal = database.noteFailure({ code: 'CONNECT_TIMEOUT' });
    assert.equal(database.isUp(), true, 'no refusal while a fresh connection is tried');
    assert.equal(await renewal, 'renewed');
    // Timeouts that follow within the old pools' time to finish keep the new pools, so that no
    // third generation of connections opens while the first may still be open.
    const next = await database.noteFailure({ code: 'CONNECT_TIMEOUT' });
    if (performance.now() - noted < 5_000) assert.equal(next, 'kept');
    await waitUntil(async () => [...(await pids())].every((pid) => !before.has(pid)));
    assert.equal(database.isUp(), true);
    assert.deepEqual(transitions, ['down', 'up'], 'the breaker stayed closed');
    await waitUntil(async () => (await database.noteFailure({ code: 'CONNECT_TIMEOUT' })) === 'renewed', 20_000);
    assert.ok(performance.now() - noted >= 5_000, 'the next renewal waits out the spacing');
  });

  it('says what a failure led to: an error that is no outage is ignored, one check runs at a time', async () => {
    assert.equal(await database.noteFailure(new Error('a query error is not an outage')), 'ignored');
    const [first, second] = await Promise.all([
      database.noteFailure({ code: 'CONNECTION_CLOSED' }), database.noteFailure({ code: 'CONNECTION_CLOSED' }),
    ]);
    assert.deepEqual([first, second], ['kept', 'ignored'], 'a closed connection with the database up renews nothing');
  });
});

describe('the gate against the driver queue defect (db.ts, poolSize)', () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  let admin: Sql;
  before(async () => {
    test = await createTestDatabase();
    admin = connectDatabase(test.url, { applicationName: 'gate-admin' });
  });
  after(async () => {
    await admin.end();
    await test.drop();
  });

  it('was written for the driver whose queue has the defect', async () => {
    // When this fails, the driver has changed: run test/bench/driver-queue.ts against it and
    // update docs/operations.md, "Driver defects" (the gate stays: it bounds the wait for 503s).
    const installed = JSON.parse(await readFile(new URL('../../node_modules/postgres/package.json', import.meta.url), 'utf8'));
    assert.equal(installed.version, '3.4.9');
  });

  /**
   * Fifty queries that wait on an advisory lock, made at once: those that reach a connection
   * block in the database, the rest wait behind them. Then count the queries the driver has
   * written to its connections.
   */
  const queriesSentWhileTenWait = async (applicationName: string, gated: boolean) => {
    let sent = 0;
    const text = 'SELECT pg_advisory_lock_shared(4242), pg_advisory_unlock_shared(4242)';
    const onQuery = (query: string) => void (query === text && (sent += 1));
    const database = gated ? openDatabase(test.url, { applicationName, onQuery }) : null;
    const sql = database?.sql ?? connectDatabase(test.url, { applicationName, onQuery });
    // Ten connections open first: while they connect, the driver holds queries back anyway.
    await Promise.all(Array.from({ length: 10 }, () => sql`SELECT 1`));
    const holder = await admin.reserve();
    await holder`SELECT pg_advisory_lock(4242)`;
    const queries = Array.from({ length: 50 }, () => sql.unsafe(text).then(() => 1));
    await waitUntil(async () => {
      const [row] = await admin`
        SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid)
        WHERE l.locktype = 'advisory' AND NOT l.granted AND a.application_name = ${applicationName}`;
      return row!.n === 10;
    });
    const sentWhileBlocked = sent;
    await holder`SELECT pg_advisory_unlock(4242)`;
    holder.release();
    assert.equal((await Promise.all(queries)).length, 50, 'all fifty answered');
    const max = sql.options.max;
    await (database === null ? sql.end() : database.end());
    return { sent: sentWhileBlocked, max };
  };

  it('hands each driver pool one connection and at most four queries at once', async () => {
    // The bare pool of ten pipelines all fifty: forty onto busy connections, the defect's path.
    assert.deepEqual(await queriesSentWhileTenWait('gate-bare', false), { sent: 50, max: 10 });
    // The handle: ten pools of one connection, four queries each; ten wait in its gate.
    assert.deepEqual(await queriesSentWhileTenWait('gate-handle', true), { sent: 40, max: 1 });
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

  it("recognises the driver's own types query failing on a connection that ended, and nothing else", () => {
    const types = "\n      select b.oid, b.typarray\n      from pg_catalog.pg_type a";
    const ended = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    Object.defineProperty(ended, 'query', { value: types });
    assert.equal(isUncaughtDriverDefect(ended), true);
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    Object.defineProperty(reset, 'query', { value: types });
    assert.equal(isUncaughtDriverDefect(reset), true);
    const badQuery = Object.assign(new Error('syntax error'), { code: '42601' });
    Object.defineProperty(badQuery, 'query', { value: types });
    assert.equal(isUncaughtDriverDefect(badQuery), false, 'not an ended connection');
    const mine = Object.assign(new Error('terminating connection'), { code: '57P01' });
    Object.defineProperty(mine, 'query', { value: 'SELECT 1' });
    assert.equal(isUncaughtDriverDefect(mine), false, "a query of the service's own");
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
