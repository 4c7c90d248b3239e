import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { waitUntil } from '../helpers/wait.ts';

// An endpoint that takes an address must do the same database work whatever the address holds
// (POST /auth/token, which takes a name or an address, is pinned in tokens.test.ts):
// the same statements, writing the same number of rows to the same tables. Timing can then only
// tell the cases apart by noise (the bench measures it: test/bench/timing.ts).

let app: TestService;
const statements: string[] = [];
before(async () => {
  // The workers (outbox, reset requests) wait: only the request's own work is compared.
  app = await startTestService({ env: { FEATURES: 'second-factor,passkeys,email-change,common-passwords,sign-in-notices,export,email-code' }, outbox: { pollMs: 600_000, wakeJitterMs: 600_000 }, onQuery: (text) => statements.push(text.replace(/\s+/g, ' ').trim()) });
  // The start-up's own background work, the outbox's first claim and the hash-wrapping pass, is
  // done before anything is counted: on a loaded machine it could land inside a counted request.
  await waitUntil(async () => statements.some((text) => text.startsWith('UPDATE outbox SET lease')) && statements.some((text) => text.includes('FROM accounts WHERE id >')));
});
after(async () => {
  await app.stop();
});

const tables = ['accounts', 'one_time_codes', 'address_quotas', 'name_holds', 'security_events', 'outbox', 'reset_requests', 'registration_requests', 'sign_in_code_requests', 'sessions', 'refresh_tokens'];

async function rowCounts(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) counts[table] = (await app.service.sql`SELECT count(*)::int AS n FROM ${app.service.sql(table)}`)[0]!.n as number;
  return counts;
}

/** The statements a request ran and how many rows it added to each table. */
async function workOf(send: () => Promise<number>): Promise<{ status: number; statements: string[]; added: Record<string, number> }> {
  const before = await rowCounts();
  statements.length = 0;
  const status = await send();
  const own = statements.filter((text) => !text.startsWith('SELECT count(*)::int AS n FROM'));
  const afterCounts = await rowCounts();
  const added = Object.fromEntries(tables.map((table) => [table, afterCounts[table]! - before[table]!]));
  return { status, statements: own, added };
}

describe('POST /acc/pwd/code', () => {
  it('runs the same statements and writes the same rows for an address with an account, a pending one and an unknown one', async () => {
    // The outbox waits in this file, so no code arrives: the account is activated in the database.
    const active = uniqueUser('active');
    const pending = uniqueUser('pending');
    for (const user of [active, pending]) assert.equal((await app.call('POST', '/acc/reg/code', { json: user })).status, 204);
    await app.service.sql`UPDATE accounts SET activated_at = now(), expires_at = NULL WHERE name = ${active.name}`;
    const send = (email: string) => async () => (await app.call('POST', '/acc/pwd/code', { json: { email } })).status;
    const known = await workOf(send(active.email));
    const waiting = await workOf(send(pending.email));
    const unknown = await workOf(send(uniqueUser('nobody').email));
    assert.equal(known.status, 204);
    for (const other of [waiting, unknown]) {
      assert.equal(other.status, known.status);
      assert.deepEqual(other.statements, known.statements, 'the same statements in the same order');
      assert.deepEqual(other.added, known.added, 'the same rows in the same tables');
    }
    assert.deepEqual(known.added, { ...Object.fromEntries(tables.map((table) => [table, 0])), address_quotas: 1, reset_requests: 1 });
  });
});

describe('POST /auth/code', () => {
  it('runs the same statements and writes the same rows for an address with an account, a pending one and an unknown one', async () => {
    const active = uniqueUser('code-active');
    const pending = uniqueUser('code-pending');
    for (const user of [active, pending]) assert.equal((await app.call('POST', '/acc/reg/code', { json: user })).status, 204);
    await app.service.sql`UPDATE accounts SET activated_at = now(), expires_at = NULL WHERE name = ${active.name}`;
    const send = (email: string) => async () => (await app.call('POST', '/auth/code', { json: { email } })).status;
    const known = await workOf(send(active.email));
    const waiting = await workOf(send(pending.email));
    const unknown = await workOf(send(uniqueUser('code-nobody').email));
    assert.equal(known.status, 204);
    for (const other of [waiting, unknown]) {
      assert.equal(other.status, known.status);
      assert.deepEqual(other.statements, known.statements, 'the same statements in the same order');
      assert.deepEqual(other.added, known.added, 'the same rows in the same tables');
    }
    assert.deepEqual(known.added, { ...Object.fromEntries(tables.map((table) => [table, 0])), address_quotas: 1, sign_in_code_requests: 1 });
  });
});

describe('POST /acc/reg/code', () => {
  it('runs the same statements and writes the same rows for an address with an account, a pending one and an unknown one', async () => {
    // The worker waits in this file: the account and the pending registration are stored directly.
    const active = uniqueUser('reg-active');
    const pending = uniqueUser('reg-pending');
    const hash = '$scrypt$ln=4,r=8,p=1$c2FsdA$aGFzaA';
    await app.service.sql`INSERT INTO accounts (name, email, password_hash, activated_at) VALUES (${active.name}, ${active.email}, ${hash}, now())`;
    await app.service.sql`INSERT INTO accounts (name, email, password_hash, expires_at) VALUES (${pending.name}, ${pending.email}, ${hash}, now() + interval '1 hour')`;
    const send = (email: string) => async () => (await app.call('POST', '/acc/reg/code', { json: { name: uniqueUser('reg').name, email, pwd: 'same-work-password' } })).status;
    const known = await workOf(send(active.email));
    const waiting = await workOf(send(pending.email));
    const unknown = await workOf(send(uniqueUser('reg-nobody').email));
    assert.equal(known.status, 204);
    for (const other of [waiting, unknown]) {
      assert.equal(other.status, known.status);
      assert.deepEqual(other.statements, known.statements, 'the same statements in the same order');
      assert.deepEqual(other.added, known.added, 'the same rows in the same tables');
    }
    assert.deepEqual(known.added, { ...Object.fromEntries(tables.map((table) => [table, 0])), name_holds: 1, address_quotas: 1, registration_requests: 1 });
  });
});
