import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deleteAccount, deletionCode, eventsOf, passwordGrant } from '../helpers/accounts.ts';
import { codeIn } from '../helpers/smtp.ts';
import { untilFailedSignIns, waitUntil } from '../helpers/wait.ts';
import { registerAndSignIn, requestCode, keyedHashesOf, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

let app: TestService;
before(async () => {
  app = await startTestService({ env: { TRUST_PROXY: '1' } });
});
after(async () => {
  await app.stop();
});

const from = (address: string) => ({ 'x-forwarded-for': address });
/** DELETE /acc/me's first step: the password alone. */
const ask = (token: string, pwd: string, address = '198.51.100.20') => app.call('DELETE', '/acc/me', { token, json: { pwd }, headers: from(address) });
/** Both steps: the password, then the password with the code mailed to the account. */
const remove = (token: string, user: { email: string; pwd: string }, address = '198.51.100.20') =>
  deleteAccount(app, token, user, {}, { headers: from(address) });

/** Every row of every table of the service's schema, as text, to look for traces of an account. */
async function dumpTables(): Promise<string> {
  const tables = await app.service.sql`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`;
  assert.ok(tables.length >= 10, tables.map((row) => row.tablename).join());
  // bytea columns (keyed hashes) as PostgreSQL prints them, \x and hex, so that a key can be looked for.
  const bytes = (_key: string, value: unknown) =>
    (value as { type?: unknown } | null)?.type === 'Buffer' ? `\\x${Buffer.from((value as { data: number[] }).data).toString('hex')}` : value;
  const dumps = await Promise.all(tables.map(async ({ tablename }) => `${tablename}: ${JSON.stringify(await app.service.sql`SELECT * FROM ${app.service.sql(tablename as string)}`, bytes)}`));
  return dumps.join('\n');
}

describe('DELETE /acc/me', () => {
  it('refuses a wrong password with 403, and the failure counts toward the throttle', async () => {
    const { user, token } = await registerAndSignIn(app);
    for (let i = 0; i < 5; i += 1) {
      const wrong = await ask(token, 'wrong-password');
      assert.equal(wrong.status, 403);
      assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-password');
    }
    assert.equal((await ask(token, user.pwd)).status, 429, 'throttled like a sign-in');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '198.51.100.20' })).status, 200, 'on a count of its own, apart from sign-in by name or address');
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 200, 'nothing was deleted');
  });

  it('checks the token first, then the body', async () => {
    const { token } = await registerAndSignIn(app);
    assert.equal((await app.call('DELETE', '/acc/me', { json: { pwd: 'whatever-1' } })).status, 401);
    for (const body of [{}, { pwd: 'short' }, { pwd: 12345678 }, { pwd: 'long-enough', extra: true }]) {
      assert.equal((await app.call('DELETE', '/acc/me', { token, json: body })).status, 400, JSON.stringify(body));
    }
    assert.equal((await app.call('DELETE', '/acc/me', { token, body: 'pwd=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 415);
  });

  it('needs the mailbox: the password alone mails a code, and a wrong code uses nothing up', async () => {
    const { user, token } = await registerAndSignIn(app);
    const asked = await ask(token, user.pwd);
    assert.equal(asked.status, 202, asked.text);
    assert.equal(asked.text, '');
    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your code to delete your account');
    assert.match(mail.text, /asked from the address 198\.51\.100\.20 to delete the account/);
    const code = codeIn(mail);
    const wrong = await app.call('DELETE', '/acc/me', { token, json: { pwd: user.pwd, email_code: 'ABCD-EFGH-IJKL-MNOP' } });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-email-code');
    assert.equal((await ask(token, user.pwd)).status, 429, 'one code a minute, as for a passkey');
    const wrongPassword = await app.call('DELETE', '/acc/me', { token, json: { pwd: 'wrong-password', email_code: code } });
    assert.equal(wrongPassword.status, 403, 'the code alone is not enough');
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 200, 'nothing was deleted');
    const deleted = await app.call('DELETE', '/acc/me', { token, json: { pwd: user.pwd, email_code: code.toLowerCase() } });
    assert.equal(deleted.status, 204, 'the wrong code and the wrong password used nothing up');
  });

  it("holds a deleted account's name for its address only, for NAME_HOLD_DAYS", async () => {
    const { user, token } = await registerAndSignIn(app);
    assert.equal((await remove(token, user)).status, 204);
    const thief = { ...uniqueUser('thief'), name: user.name };
    const taken = await app.call('POST', '/acc/reg/code', { json: thief, headers: from('203.0.113.90') });
    assert.equal(taken.status, 409, taken.text);
    assert.equal(taken.json.type, 'urn:account-service:problem:name-taken');
    const [hold] = await app.service.sql`SELECT address, address_key, expires_at FROM name_holds WHERE name = ${user.name}`;
    const keys = await keyedHashesOf(app);
    assert.equal(hold!.address, null, 'no address is kept');
    assert.deepEqual(hold!.address_key, keys.address(user.email));
    const days = ((hold!.expires_at as Date).getTime() - app.clock.now().getTime()) / 86_400_000;
    assert.ok(days > 29.9 && days <= 30, String(days));
    const notice = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your account was deleted');
    assert.match(notice.text, /For 30 days only this address may register the name/);
    app.clock.advance(30 * 86_400 + 1);
    const free = await app.call('POST', '/acc/reg/code', { json: thief, headers: from('203.0.113.91') });
    assert.equal(free.status, 204, `free once the hold ends: ${free.text}`);

    const unheld = await startTestService({ env: { NAME_HOLD_DAYS: '0' } });
    try {
      const other = await registerAndSignIn(unheld);
      assert.equal((await deleteAccount(unheld, other.token, other.user)).status, 204);
      const next = await unheld.call('POST', '/acc/reg/code', { json: { ...uniqueUser('next'), name: other.user.name } });
      assert.equal(next.status, 204, `NAME_HOLD_DAYS=0 frees the name at once: ${next.text}`);
    } finally {
      await unheld.stop();
    }
  });

  it('deletes the account and everything of it, mails the owner, and frees the address at once', async () => {
    const { user, token } = await registerAndSignIn(app);
    const other = await passwordGrant(app, user.email, user.pwd, { address: '198.51.100.20' });
    await app.call('GET', '/acc/me', { token });
    const [row] = await app.service.sql`SELECT id, public_id FROM accounts WHERE name = ${user.name}`;
    const before = app.smtp.messages.length;
    await app.call('POST', '/acc/pwd/code', { json: { email: user.email } });
    await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
    await passwordGrant(app, user.name, 'wrong-password', { address: '198.51.100.20' });

    const deleted = await remove(token, user);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    const notice = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your account was deleted');
    assert.match(notice.text, /deleted at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z from the address 198\.51\.100\.20/);
    for (const access of [token, other.json.access_token]) assert.equal((await app.call('GET', '/acc/me', { token: access })).status, 401);
    assert.equal((await app.call('POST', '/auth/token', { json: { grant_type: 'refresh_token', refresh_token: other.json.refresh_token } })).status, 400);

    await waitUntil(async () => (await app.service.sql`SELECT count(*)::int AS n FROM outbox WHERE state = 'pending'`)[0]!.n === 0);
    const dump = await dumpTables();
    const keys = await keyedHashesOf(app);
    const hex = (bytes: Buffer) => `\\\\x${bytes.toString('hex')}`;
    // The name stays, held for the address by its keyed hash (the test above).
    const withoutHold = dump.replace(`{"name":"${user.name}","address":null,`, '');
    for (const trace of [user.name, user.email, user.email.toLowerCase(), row!.public_id as string, `"account_id":"${row!.id}"`, hex(keys.loginIdentifier(user.name)), hex(keys.loginIdentifier(user.email))]) {
      assert.equal(withoutHold.includes(trace), false, `a trace of the account: ${trace}`);
    }
    // The address's code quotas and the name's hold stay, by keyed hash only.
    assert.equal(dump.includes(hex(keys.address(user.email))), true);

    app.clock.advance(61);
    const again = await registerAndSignIn(app, user);
    assert.equal((await app.call('GET', '/acc/me', { token: again.token })).json.name, user.name, 'the same name and address register again, once the cooldown is over');
    const metrics = (await app.call('GET', '/metrics')).text;
    assert.match(metrics, /^accounts_deleted_total [1-9]/m);
  });

  it("keeps the address's code quotas, so that a stranger who spent them learns nothing from a deletion", async () => {
    // An outside tester spent the reset cooldown of an address and of a control address; the
    // deletion freed the first at once (204 where the control answered 429): the address had
    // an account, deleted just now.
    const { user, token } = await registerAndSignIn(app);
    const control = uniqueUser('control').email;
    const reset = (email: string) => app.call('POST', '/acc/pwd/code', { json: { email }, headers: from('203.0.113.77') });
    const register = (email: string) => app.call('POST', '/acc/reg/code', { json: { ...uniqueUser('stranger'), email }, headers: from('203.0.113.78') });
    app.clock.advance(61);
    for (const request of [reset, register]) {
      for (const email of [user.email, control]) assert.equal((await request(email)).status, 204);
      for (const email of [user.email, control]) assert.equal((await request(email)).status, 429);
    }
    const code = await deletionCode(app, token, user);
    assert.equal((await app.call('DELETE', '/acc/me', { token, json: { pwd: user.pwd, email_code: code } })).status, 204);
    for (const request of [reset, register]) {
      const answers = await Promise.all([user.email, control].map(async (email) => (await request(email)).json?.type));
      assert.deepEqual(answers, ['urn:account-service:problem:too-soon', 'urn:account-service:problem:too-soon'], 'the deleted address answers as the control does');
    }
  });

  it('ends a race with a password change in one consistent state', async () => {
    for (let round = 0; round < 3; round += 1) {
      const { user, token } = await registerAndSignIn(app);
      const code = await deletionCode(app, token, user);
      const [deletion, change] = await Promise.all([
        app.call('DELETE', '/acc/me', { token, json: { pwd: user.pwd, email_code: code }, headers: from(`198.51.100.${30 + round}`) }),
        app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: 'changed-in-race' }, headers: from(`198.51.100.${40 + round}`) }),
      ]);
      const [row] = await app.service.sql`SELECT count(*)::int AS n FROM accounts WHERE name = ${user.name}`;
      if (deletion.status === 204) {
        assert.equal(change.status, 401, 'the change lost');
        assert.equal(row!.n, 0);
      } else {
        assert.deepEqual([deletion.status, change.status], [401, 204], 'the deletion lost');
        assert.equal(row!.n, 1);
        assert.equal((await passwordGrant(app, user.name, 'changed-in-race', { address: '198.51.100.50' })).status, 200);
      }
    }
  });
});

describe('GET /acc/me/events', () => {
  it('shows every event type after its cause, newest first, with the right session and address', async () => {
    const { user, token } = await registerAndSignIn(app);
    const [helperSession] = (await app.call('GET', '/acc/me/sessions', { token })).json.sessions.map((session: { id: string }) => session.id);
    await passwordGrant(app, user.name, 'wrong-password', { address: '203.0.113.1' });
    await untilFailedSignIns(app.service.sql, user.name, 1);
    const second = (await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.2' })).json;
    const secondId = (await app.call('GET', '/acc/me/sessions', { token: second.access_token })).json.sessions.find((session: { current: boolean }) => session.current).id;
    assert.equal((await app.call('DELETE', `/acc/me/sessions/${secondId}`, { token, headers: from('203.0.113.3') })).status, 204);
    assert.equal((await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: 'changed-password' }, headers: from('203.0.113.4') })).status, 204);
    const before = app.smtp.messages.length;
    await app.call('POST', '/acc/pwd/code', { json: { email: user.email }, headers: from('203.0.113.5') });
    const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
    await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'reset-password' }, headers: from('203.0.113.6') });
    const third = (await passwordGrant(app, user.name, 'reset-password', { address: '203.0.113.7' })).json;
    await app.call('DELETE', '/acc/me/sessions', { token: third.access_token, headers: from('203.0.113.8') });
    const last = (await passwordGrant(app, user.name, 'reset-password', { address: '203.0.113.9' })).json;

    const events = await eventsOf(app, last.access_token);
    const lastId = (await app.call('GET', '/acc/me/sessions', { token: last.access_token })).json.sessions[0].id;
    const thirdId = events.find((event) => event.client_address === '203.0.113.7')!.session_id;
    assert.deepEqual(
      events.map((event) => [event.type, event.client_address, event.session_id]),
      [
        ['signed-in', '203.0.113.9', lastId],
        ['signed-out-everywhere', '203.0.113.8', thirdId],
        ['signed-in', '203.0.113.7', thirdId],
        ['password-reset', '203.0.113.6', null],
        ['reset-requested', '203.0.113.5', null],
        ['password-changed', '203.0.113.4', helperSession],
        ['session-revoked', '203.0.113.3', secondId],
        ['signed-in', '203.0.113.2', secondId],
        ['sign-in-failed', '203.0.113.1', null],
        ['signed-in', '127.0.0.1', helperSession],
        ['activated', '127.0.0.1', null],
      ],
    );
    for (const event of events) assert.match(event.occurred_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const dump = JSON.stringify(await app.service.sql`SELECT * FROM security_events`);
    for (const secret of [user.pwd, 'changed-password', 'reset-password', codeIn(mail), last.access_token, last.refresh_token]) {
      assert.equal(dump.includes(secret), false, 'no secret in any event');
    }
  });

  it('records a revocation through POST /auth/revoke and a detected reuse', async () => {
    const { user, token } = await registerAndSignIn(app);
    const first = (await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.20' })).json;
    await app.call('POST', '/auth/revoke', { json: { token: first.refresh_token }, headers: from('203.0.113.21') });
    const second = (await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.22' })).json;
    await app.call('POST', '/auth/token', { json: { grant_type: 'refresh_token', refresh_token: second.refresh_token } });
    app.clock.advance(11);
    await app.call('POST', '/auth/token', { json: { grant_type: 'refresh_token', refresh_token: second.refresh_token }, headers: from('203.0.113.23') });
    const events = (await eventsOf(app, token)).slice(0, 4).map((event) => [event.type, event.client_address]);
    assert.deepEqual(events, [
      ['refresh-token-reused', '203.0.113.23'],
      ['signed-in', '203.0.113.22'],
      ['session-revoked', '203.0.113.21'],
      ['signed-in', '203.0.113.20'],
    ]);
  });

  it("never shows another account's events, and writes nothing for an unknown name", async () => {
    const mine = await registerAndSignIn(app);
    const theirs = await registerAndSignIn(app);
    await passwordGrant(app, theirs.user.name, 'wrong-password', { address: '203.0.113.30' });
    await untilFailedSignIns(app.service.sql, theirs.user.name, 1);
    const count = async () => (await app.service.sql`SELECT count(*)::int AS n FROM security_events`)[0]!.n as number;
    const before = await count();
    await passwordGrant(app, `nobody-${mine.user.name}`, 'wrong-password', { address: '203.0.113.31' });
    // Events are written after the answer: a known name's failure after it is the barrier.
    await passwordGrant(app, theirs.user.name, 'wrong-password', { address: '203.0.113.32' });
    await untilFailedSignIns(app.service.sql, theirs.user.name, 2);
    assert.equal(await count(), before + 1, 'a failed sign-in on an unknown name writes nothing');
    const events = await eventsOf(app, mine.token);
    assert.deepEqual(events.map((event) => event.type), ['signed-in', 'activated']);
    assert.equal(events.some((event) => event.client_address?.startsWith('203.0.113.3')), false);
  });

  it("shows at most 10 failed sign-ins, so that strangers' guesses cannot push the owner's events out of view", async () => {
    const { user, token } = await registerAndSignIn(app);
    await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.66' });
    for (let i = 0; i < 60; i += 1) await passwordGrant(app, i % 2 === 0 ? user.name : user.email, 'wrong-password', { address: `10.3.0.${i}` });
    await untilFailedSignIns(app.service.sql, user.name, 60);
    const events = await eventsOf(app, token);
    assert.equal(events.filter((event) => event.type === 'sign-in-failed').length, 10);
    assert.deepEqual(events.filter((event) => event.type !== 'sign-in-failed').map((event) => [event.type, event.client_address]), [
      ['signed-in', '203.0.113.66'],
      ['signed-in', '127.0.0.1'],
      ['activated', '127.0.0.1'],
    ]);
    assert.equal(events[0]!.type, 'sign-in-failed', 'newest first, the failures too');
  });

  it('shows the latest 50, and the sweep deletes events older than EVENT_RETENTION_DAYS', async () => {
    const { user, token } = await registerAndSignIn(app);
    for (let i = 0; i < 55; i += 1) await passwordGrant(app, user.name, user.pwd, { address: `203.0.114.${i}` });
    const events = await eventsOf(app, token);
    assert.equal(events.length, 50);
    assert.equal(events[0]!.client_address, '203.0.114.54');
    app.clock.advance(89 * 24 * 3600);
    await app.service.sweep();
    const [kept] = await app.service.sql`SELECT count(*)::int AS n FROM security_events e JOIN accounts a ON a.id = e.account_id WHERE a.name = ${user.name}`;
    assert.equal(kept!.n, 57, 'kept within 90 days');
    app.clock.advance(2 * 24 * 3600);
    await app.service.sweep();
    const [swept] = await app.service.sql`SELECT count(*)::int AS n FROM security_events e JOIN accounts a ON a.id = e.account_id WHERE a.name = ${user.name}`;
    assert.equal(swept!.n, 0, 'swept after 90 days');
  });
});

describe('a pending registration', () => {
  it('has no events until it is activated', async () => {
    const [before] = await app.service.sql`SELECT count(*)::int AS n FROM security_events`;
    await requestCode(app, { name: `pending-${process.pid}`, email: `pending-${process.pid}@example.com`, pwd: 'pending-password' });
    const [after] = await app.service.sql`SELECT count(*)::int AS n FROM security_events`;
    assert.equal(after!.n, before!.n);
  });
});
