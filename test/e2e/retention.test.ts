import { strangerKinds } from '../../src/core/security-events.ts';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { KeyedHashes } from '../../src/core/keyed-hashes.ts';
import { registerAndSignIn, requestCode, keyedHashesOf, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { untilFailedSignIns, waitUntil } from '../helpers/wait.ts';

// One test for each row of the retention table in docs/operations.md ("Retention"): each kind
// of row is still there just before its rule says it goes, and gone after the next sweep.

let app: TestService;
/** Its workers wait, so that only the sweep can remove what a stopped worker would leave. */
let paused: TestService;
let keys: KeyedHashes;
const hour = 3600;
const day = 24 * hour;
before(async () => {
  app = await startTestService();
  keys = await keyedHashesOf(app);
  paused = await startTestService({ outbox: { pollMs: 600_000, wakeJitterMs: 600_000 } });
});
after(async () => {
  await app.stop();
  await paused.stop();
});

/** Moves the clock by `seconds`, sweeps, and returns how many rows `count` finds then. */
async function afterSweep(seconds: number, count: () => Promise<number>, service = app): Promise<number> {
  service.clock.advance(seconds);
  await service.service.sweep();
  return count();
}
const countOf = (rows: Promise<Array<Record<string, unknown>>>) => rows.then((result) => result[0]!.n as number);

describe('retention: every table a stranger or a client can grow', () => {
  it('pending registrations and their codes: deleted an hour after they expire', async () => {
    const user = uniqueUser('pending');
    await requestCode(app, user);
    const registrations = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM accounts WHERE name = ${user.name}`);
    const codes = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM one_time_codes WHERE account_id IN (SELECT id FROM accounts WHERE name = ${user.name})`);
    assert.equal(await afterSweep(1800 + hour - 10, registrations), 1);
    assert.equal(await codes(), 1);
    assert.equal(await afterSweep(20, registrations), 0);
    const [orphans] = await app.service.sql`SELECT count(*)::int AS n FROM one_time_codes WHERE expires_at < ${new Date(app.clock.now().getTime() - hour * 1000)}`;
    assert.equal(orphans!.n, 0, 'no code outlives its hour');
  });

  it('name holds: deleted when they expire, with the registration code', async () => {
    const user = uniqueUser('hold');
    assert.equal((await app.call('POST', '/acc/reg/code', { json: user })).status, 204);
    const holds = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM name_holds WHERE name = ${user.name}`);
    assert.equal(await afterSweep(1800 - 10, holds), 1);
    assert.equal(await afterSweep(20, holds), 0);
  });

  it('address quotas: deleted a day after the last request for the address', async () => {
    const email = uniqueUser('quota').email;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email } })).status, 204);
    const quotas = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM address_quotas WHERE address_key = ${keys.address(email)}`);
    assert.equal(await afterSweep(day - 10, quotas), 1);
    assert.equal(await afterSweep(20, quotas), 0);
  });

  it('sign-in throttle: budgets deleted an hour after their last failure, delays a day after', async () => {
    const name = uniqueUser('throttle').name;
    const response = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: name, password: 'wrong-password' } });
    assert.equal(response.status, 400);
    const key = keys.loginIdentifier(name);
    const budgets = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM login_budgets WHERE identifier_key = ${key}`);
    const delays = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM login_delays WHERE identifier_key = ${key}`);
    assert.equal(await afterSweep(hour - 10, budgets), 1);
    assert.equal(await afterSweep(20, budgets), 0);
    assert.equal(await delays(), 1);
    assert.equal(await afterSweep(day - hour - 20, delays), 1);
    assert.equal(await afterSweep(20, delays), 0);
  });

  it('sign-in throttle: known networks deleted 30 days after their last sign-in', async () => {
    const { user } = await registerAndSignIn(app);
    const key = keys.loginIdentifier(user.name);
    const known = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM login_known_clients WHERE identifier_key = ${key}`);
    assert.equal(await known(), 1, 'registerAndSignIn signed in by name');
    assert.equal(await afterSweep(30 * day - 10, known), 1);
    assert.equal(await afterSweep(20, known), 0);
  });

  it('reset requests: deleted when resolved, and unresolved ones once a code issued for them would have expired', async () => {
    const email = uniqueUser('reset').email;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email } })).status, 204);
    await waitUntil(async () => (await countOf(app.service.sql`SELECT count(*)::int AS n FROM reset_requests WHERE address = ${email}`)) === 0);

    // As a stopped worker would leave it: recorded almost RESET_CODE_TTL (900 s) ago.
    const stale = uniqueUser('stale').email;
    await paused.service.sql`INSERT INTO reset_requests (address, client_address, requested_at) VALUES (${stale}, '127.0.0.1', ${new Date(paused.clock.now().getTime() - 890_000)})`;
    const requests = () => countOf(paused.service.sql`SELECT count(*)::int AS n FROM reset_requests WHERE address = ${stale}`);
    assert.equal(await afterSweep(0, requests, paused), 1);
    assert.equal(await afterSweep(20, requests, paused), 0);
  });

  it('registration requests: deleted when resolved, and unresolved ones once the registration would have expired', async () => {
    const user = uniqueUser('requested');
    assert.equal((await app.call('POST', '/acc/reg/code', { json: user })).status, 204);
    await waitUntil(async () => (await countOf(app.service.sql`SELECT count(*)::int AS n FROM registration_requests WHERE address = ${user.email}`)) === 0);

    // As a stopped worker would leave it: its registration expires in 10 s.
    const stale = uniqueUser('stale-registration');
    const expiresAt = new Date(paused.clock.now().getTime() + 10_000);
    await paused.service.sql`
      INSERT INTO registration_requests (name, address, password_hash, expires_at, requested_at)
      VALUES (${stale.name}, ${stale.email}, '$scrypt$ln=4,r=8,p=1$c2FsdA$aGFzaA', ${expiresAt}, ${paused.clock.now()})`;
    const requests = () => countOf(paused.service.sql`SELECT count(*)::int AS n FROM registration_requests WHERE address = ${stale.email}`);
    assert.equal(await afterSweep(0, requests, paused), 1);
    assert.equal(await afterSweep(20, requests, paused), 0);
  });

  it('outbox: a sent message keeps neither content nor address; sent and failed messages are deleted a week after they were queued', async () => {
    const user = uniqueUser('mail');
    await requestCode(app, user);
    const [queued] = await app.service.sql`SELECT id FROM outbox WHERE created_at >= ${new Date(app.clock.now().getTime() - 60_000)} ORDER BY id DESC LIMIT 1`;
    await waitUntil(async () => (await app.service.sql`SELECT state FROM outbox WHERE id = ${queued!.id}`)[0]!.state === 'sent');
    const [sent] = await app.service.sql`SELECT recipient, sealed_content FROM outbox WHERE id = ${queued!.id}`;
    assert.deepEqual({ ...sent }, { recipient: null, sealed_content: null });
    const [{ n: withAddress }] = (await app.service.sql`SELECT count(*)::int AS n FROM outbox WHERE state = 'sent' AND recipient IS NOT NULL`) as unknown as [{ n: number }];
    assert.equal(withAddress, 0, 'no sent message keeps an address');

    const failedAt = app.clock.now();
    await app.service.sql`
      INSERT INTO outbox (message_id, kind, recipient, sealed_content, state, attempts, next_attempt_at, created_at)
      VALUES (${`<failed-${user.name}@test>`}, 'reset-code', ${user.email}, '\\x00', 'failed', 12, ${failedAt}, ${failedAt})`;
    const rows = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM outbox WHERE id = ${queued!.id} OR message_id = ${`<failed-${user.name}@test>`}`);
    assert.equal(await afterSweep(7 * day - 10, rows), 2);
    assert.equal(await afterSweep(20, rows), 0);
  });

  it('spent passkey challenges: deleted 5 minutes after they expire, a margin over any clock skew between instances', async () => {
    // As a presented sign-in challenge is recorded: with its expiry, 5 minutes after it was issued.
    const challenge = randomBytes(32);
    const expiresAt = new Date(app.clock.now().getTime() + 300_000);
    await app.service.sql`INSERT INTO spent_passkey_challenges (challenge, expires_at) VALUES (${challenge}, ${expiresAt})`;
    const spent = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM spent_passkey_challenges WHERE challenge = ${challenge}`);
    assert.equal(await afterSweep(300 + 300 - 10, spent), 1, 'kept past its expiry, while a slower clock still takes it');
    assert.equal(await afterSweep(20, spent), 0);
  });

  it('sessions: deleted when they expire (REFRESH_TTL after the sign-in); at most SESSIONS_PER_ACCOUNT an account (bounds.test.ts)', async () => {
    const { user } = await registerAndSignIn(app);
    const sessions = () => countOf(app.service.sql`SELECT count(*)::int AS n FROM sessions WHERE account_id = (SELECT id FROM accounts WHERE name = ${user.name})`);
    assert.equal(await afterSweep(30 * day - 10, sessions), 1);
    assert.equal(await afterSweep(20, sessions), 0);
  });

  it('refresh tokens: a spent one is deleted a day after it was spent', async () => {
    const { user } = await registerAndSignIn(app);
    const signedIn = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd } });
    const rotated = await app.call('POST', '/auth/token', { json: { grant_type: 'refresh_token', refresh_token: signedIn.json.refresh_token } });
    assert.equal(rotated.status, 200);
    const spent = () => countOf(app.service.sql`
      SELECT count(*)::int AS n FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id
      WHERE r.spent_at IS NOT NULL AND s.account_id = (SELECT id FROM accounts WHERE name = ${user.name})`);
    assert.equal(await afterSweep(day - 10, spent), 1);
    assert.equal(await afterSweep(20, spent), 0);
  });

  it("security events: deleted after EVENT_RETENTION_DAYS; strangers' kinds (failed sign-ins, reset requests) after a week", async () => {
    const { user } = await registerAndSignIn(app);
    const failed = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: 'wrong-password' } });
    assert.equal(failed.status, 400);
    await untilFailedSignIns(app.service.sql, user.name, 1);
    const ofType = (type: string) => () => countOf(app.service.sql`
      SELECT count(*)::int AS n FROM security_events WHERE type = ${type} AND account_id = (SELECT id FROM accounts WHERE name = ${user.name})`);
    assert.equal(await afterSweep(7 * day - 10, ofType('sign-in-failed')), 1);
    assert.equal(await afterSweep(20, ofType('sign-in-failed')), 0);
    assert.equal(await ofType('signed-in')(), 1, "the owner's own events stay");
    assert.equal(await afterSweep(83 * day - 20, ofType('signed-in')), 1);
    assert.equal(await afterSweep(20, ofType('signed-in')), 0);
  });

  it("security events: every kind of strangerKinds goes after a week, not only failed sign-ins and reset requests", async () => {
    const { user } = await registerAndSignIn(app);
    const [account] = await app.service.sql`SELECT id FROM accounts WHERE name = ${user.name}`;
    for (const type of strangerKinds) {
      await app.service.sql`
        INSERT INTO security_events (account_id, type, occurred_at, client_address)
        VALUES (${account!.id as string}, ${type}, ${app.clock.now()}, '127.0.0.1')`;
    }
    const strangers = () => countOf(app.service.sql`
      SELECT count(*)::int AS n FROM security_events WHERE account_id = ${account!.id as string}
        AND type = ANY(${strangerKinds as string[]})`);
    assert.equal(await afterSweep(7 * day - 10, strangers), strangerKinds.length);
    assert.equal(await afterSweep(20, strangers), 0);
  });
});
