import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPasswordHasher, type PasswordHasher } from '../../src/core/passwords.ts';
import { passwordGrant } from '../helpers/accounts.ts';
import { stopWallClock } from '../helpers/clock.ts';
import { codeIn } from '../helpers/smtp.ts';
import { waitUntil } from '../helpers/wait.ts';
import { registerAndSignIn, keyedHashesOf, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

describe('sign-in throttle', () => {
  let app: TestService;
  let checks = 0;
  before(async () => {
    const real = createPasswordHasher({ ln: 4, r: 8, p: 1 });
    // Counts the password checks actually made, to see what the throttle let through.
    const counting: PasswordHasher = { ...real, verify: (password, stored) => ((checks += 1), real.verify(password, stored)) };
    app = await startTestService({ env: { TRUST_PROXY: '1' }, passwords: counting });
  });
  after(async () => {
    await app.stop();
  });
  const seen = (response: { status: number; text: string; headers: Record<string, unknown> }) => `${response.status} ${String(response.headers['retry-after'] ?? '')} ${response.text}`;
  // The tests that count seconds (Retry-After, and the blocks that end after them) stop the wall
  // clock (clock.ts): the service's time then moves only by app.clock.advance, not by how long a
  // busy machine takes between two requests.

  it('makes every attempt after five failures wait a doubling delay, before checking the password', async (t) => {
    t.after(stopWallClock());
    const { user } = await registerAndSignIn(app);
    for (let i = 0; i < 5; i += 1) assert.equal((await passwordGrant(app, user.name, 'wrong-password', { address: '198.51.100.1' })).status, 400);
    checks = 0;
    const blocked = await passwordGrant(app, user.name, user.pwd, { address: '198.51.100.1' });
    assert.equal(blocked.status, 429, 'even the right password waits');
    assert.equal(blocked.headers['retry-after'], '1');
    assert.equal(blocked.json.error, 'temporarily_unavailable');
    assert.equal(checks, 0, 'and is not checked');
    assert.equal(blocked.json.error_description, 'Try again in 1 second.');

    app.clock.advance(1);
    assert.equal((await passwordGrant(app, user.name, 'wrong-password', { address: '198.51.100.1' })).status, 400);
    const doubled = await passwordGrant(app, user.name, user.pwd, { address: '198.51.100.1' });
    assert.equal(doubled.headers['retry-after'], '2', 'the wait doubles');
    assert.equal(doubled.json.error_description, 'Try again in 2 seconds.');
    app.clock.advance(2);
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '198.51.100.1' })).status, 200, 'the right password after the wait');
    assert.equal((await passwordGrant(app, user.name, 'wrong-password', { address: '198.51.100.1' })).status, 400, 'a success resets the count');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '198.51.100.1' })).status, 200);
  });

  it('never checks more passwords than the allowance, however many guesses run in parallel', async () => {
    const { user } = await registerAndSignIn(app);
    checks = 0;
    const started = Date.now();
    const fresh = await Promise.all(Array.from({ length: 30 }, () => passwordGrant(app, user.name, 'wrong-password', { address: '198.51.100.2' })));
    // Reservations are made as hashing slots free up; on a slow machine the burst outlasts the
    // first block (1 s), and each block that ends lets exactly one more guess through.
    const blocksEnded = Math.floor((Date.now() - started) / 1000);
    assert.ok(checks >= 5 && checks <= 5 + blocksEnded, `five free failures, and one more per ended block at most: ${checks}`);
    // The reservation is made in the hashing slot, so a burst beyond the queue gets 503 (uncharged).
    assert.equal(fresh.filter((response) => response.status === 400).length, checks);
    assert.ok(fresh.every((response) => [400, 429, 503].includes(response.status)));
    app.clock.advance(2);
    checks = 0;
    const afterBlock = await Promise.all(Array.from({ length: 30 }, () => passwordGrant(app, user.name, 'wrong-password', { address: '198.51.100.2' })));
    assert.equal(checks, 1, 'after a block ends, one guess is checked and the next block starts');
    assert.equal(afterBlock.filter((response) => response.status === 400).length, 1);
  });

  it('does not lock the owner out from another address', async () => {
    const { user } = await registerAndSignIn(app);
    for (let i = 0; i < 50; i += 1) await passwordGrant(app, user.name, 'wrong-password', { address: '203.0.113.66' });
    // On a slow machine a block may end during the loop; the guess after it starts the next one.
    const next = [await passwordGrant(app, user.name, 'wrong-password', { address: '203.0.113.66' }), await passwordGrant(app, user.name, 'wrong-password', { address: '203.0.113.66' })];
    assert.ok(next.some((response) => response.status === 429), 'the attacker waits');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.7' })).status, 200, 'the owner at another address signs in at once');
  });

  it('bounds guesses spread over many addresses by a budget per identifier', async () => {
    const { user } = await registerAndSignIn(app);
    checks = 0;
    const statuses: number[] = [];
    for (let i = 0; i < 150; i += 1) statuses.push((await passwordGrant(app, user.name, 'wrong-password', { address: `10.1.${Math.floor(i / 200)}.${i % 200}` })).status);
    assert.equal(statuses.filter((status) => status === 400).length, 100, 'LOGIN_FAILURES_PER_HOUR = 100');
    assert.equal(statuses.filter((status) => status === 429).length, 50);
    assert.equal(checks, 100);
    const owner = await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.8' });
    assert.equal(owner.status, 429, 'the name is out of budget for everyone');
    const wait = Number(owner.headers['retry-after']);
    assert.ok(wait > 0 && wait <= 36, `until one failure refills, at most an hour / 100: ${wait}`);
    assert.equal((await passwordGrant(app, user.email, user.pwd, { address: '203.0.113.8' })).status, 200, 'the address is another identifier, with its own budget');
    app.clock.advance(36);
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.8' })).status, 200, 'the budget refills');
  });

  it('answers an unknown name exactly like a known one, over every sequence', async (t) => {
    t.after(stopWallClock());
    const { user } = await registerAndSignIn(app);
    const unknown = { name: `nobody-${user.name}`, email: `nobody-${user.email}` };
    const run = async (who: { name: string; email: string }, from: string) => {
      const answers: string[] = [];
      for (let i = 0; i < 6; i += 1) answers.push(seen(await passwordGrant(app, who.name, 'wrong-password', { address: from })));
      answers.push(seen(await passwordGrant(app, who.name.toUpperCase(), 'wrong-password', { address: from })), 'then in upper case');
      answers.push(seen(await passwordGrant(app, who.email, 'wrong-password', { address: from })), 'then its address');
      answers.push(seen(await passwordGrant(app, who.email.toUpperCase(), 'wrong-password', { address: from })), 'then its address in upper case');
      return answers;
    };
    assert.deepEqual(await run(user, '192.0.2.50'), await run(unknown, '192.0.2.51'));
  });

  it('counts a wrong old password on PUT /acc/me/pwd', async (t) => {
    t.after(stopWallClock());
    const { user, token } = await registerAndSignIn(app);
    const change = (old_pwd: string) => app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd, new_pwd: 'new-password-1' }, headers: { 'x-forwarded-for': '198.51.100.9' } });
    for (let i = 0; i < 5; i += 1) assert.equal((await change('wrong-password')).status, 403);
    const blocked = await change(user.pwd);
    assert.equal(blocked.status, 429);
    assert.equal(blocked.json.type, 'urn:account-service:problem:throttled');
    assert.equal(blocked.headers['retry-after'], '1');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '198.51.100.9' })).status, 200, 'a count of its own: the token holder\'s guesses do not lock sign-in');
  });

  it('lets the owner sign in from a network it signed in from before, when strangers spent both budgets', async (t) => {
    t.after(stopWallClock());
    // An outside tester who knew the name and the address spent both budgets from 42
    // addresses and kept the owner from signing in, a reset notwithstanding.
    const { user } = await registerAndSignIn(app);
    const home = '203.0.113.20';
    for (const identifier of [user.name, user.email]) assert.equal((await passwordGrant(app, identifier, user.pwd, { address: home })).status, 200);
    for (const identifier of [user.name, user.email]) {
      for (let i = 0; i < 110; i += 1) await passwordGrant(app, identifier, 'wrong-password', { address: `10.3.${Math.floor(i / 200)}.${i % 200}` });
    }
    const stranger = (identifier: string) => passwordGrant(app, identifier, 'wrong-password', { address: '10.3.9.9' });
    for (const identifier of [user.name, user.email]) {
      assert.equal((await stranger(identifier)).status, 429, 'spent for strangers');
      assert.equal((await passwordGrant(app, identifier, user.pwd, { address: '203.0.113.21' })).status, 429, 'and for a network never signed in from');
      assert.equal((await passwordGrant(app, identifier, user.pwd, { address: home })).status, 200, 'the known network checks the password');
      assert.equal((await stranger(identifier)).status, 429, "the owner's sign-in gave strangers no token back");
    }
    // Someone else on the owner's network guesses under level 1 only, and mints no tokens.
    checks = 0;
    const neighbour: number[] = [];
    for (let i = 0; i < 8; i += 1) neighbour.push((await passwordGrant(app, user.name, 'wrong-password', { address: home })).status);
    assert.deepEqual(neighbour, [400, 400, 400, 400, 400, 429, 429, 429]);
    assert.equal(checks, 5);
    assert.equal((await stranger(user.name)).status, 429, 'the refused guesses gave strangers no token back');

    // A reset forgets the known networks: a thief's network that knew the old password must not
    // stay past the budget. Only the network that completed the reset is known afterwards, to
    // both identifiers (issue 30: the owner's way back in).
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
    const resetFrom = '203.0.113.22';
    const json = { code: codeIn(mail), new_pwd: 'after-reset-1' };
    const reset = await app.call('POST', '/acc/pwd', { json, headers: { 'x-forwarded-for': resetFrom } });
    assert.equal(reset.status, 204);
    const keys = await keyedHashesOf(app);
    const identifiers = [user.name, user.email].map((identifier) => keys.loginIdentifier(identifier));
    const known = await app.service.sql`
      SELECT client_key FROM login_known_clients WHERE identifier_key IN ${app.service.sql(identifiers)}`;
    assert.deepEqual(known.map((row) => (row.client_key as Buffer).equals(keys.client(resetFrom))), [true, true]);
  });

  it("does not let strangers who spend a name's budget keep the signed-in owner from changing the password", async () => {
    const { user, token } = await registerAndSignIn(app);
    for (let i = 0; i < 110; i += 1) await passwordGrant(app, user.name, 'wrong-password', { address: `10.2.${Math.floor(i / 200)}.${i % 200}` });
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.90' })).status, 429, 'the name is out of budget');
    const change = await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: 'owner-changed-1' }, headers: { 'x-forwarded-for': '203.0.113.90' } });
    assert.equal(change.status, 204);
  });

  it('refuses usernames that are not printable ASCII, as no stored name or address is, and never answers 500', async () => {
    const { user } = await registerAndSignIn(app);
    for (const username of [user.email.replace('u', '\u0130'), `${user.name}\u0000`, 'a\u0000b', 'caf\u00e9', 'with space']) {
      const response = await passwordGrant(app, username, user.pwd, { address: '198.51.100.1' });
      assert.equal(response.status, 400, JSON.stringify(username));
      assert.equal(response.json.error, 'invalid_request');
    }
    const form = await app.call('POST', '/auth/token', { body: 'grant_type=password&username=a%00b&password=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(form.status, 400);
  });
});

describe('per-address rate limit', () => {
  let app: TestService;
  before(async () => {
    app = await startTestService({ env: { RATE_LIMIT: '3', TRUST_PROXY: '1' } });
  });
  after(async () => {
    await app.stop();
  });

  it('answers 429 with Retry-After past RATE_LIMIT requests a minute on each unauthenticated POST', async (t) => {
    t.after(stopWallClock());
    const from = { 'x-forwarded-for': '192.0.2.1' };
    for (let i = 0; i < 3; i += 1) assert.equal((await app.call('POST', '/acc/reg', { json: { code: 'ABCD-EFGH-IJKL-MNOP' }, headers: from })).status, 404);
    const limited = await app.call('POST', '/acc/reg/code', { json: uniqueUser(), headers: from });
    assert.equal(limited.status, 429);
    assert.equal(limited.json.type, 'urn:account-service:problem:rate-limited');
    assert.equal(limited.headers['retry-after'], '20');
    const token = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: 'x', password: 'y' }, headers: from });
    assert.equal(token.status, 429);
    assert.equal(token.json.error, 'temporarily_unavailable');
    assert.equal((await app.call('GET', '/healthz', { headers: from })).status, 200, 'other routes are not limited');
  });

  it('tells clients apart by the trusted hop of X-Forwarded-For, not by what they claim', async () => {
    for (let i = 0; i < 3; i += 1) {
      const spoofed = { 'x-forwarded-for': `10.9.9.${i}, 192.0.2.2` };
      assert.equal((await app.call('POST', '/acc/reg', { json: { code: 'ABCD-EFGH-IJKL-MNOP' }, headers: spoofed })).status, 404);
    }
    const again = await app.call('POST', '/acc/reg', { json: { code: 'ABCD-EFGH-IJKL-MNOP' }, headers: { 'x-forwarded-for': '10.9.9.9, 192.0.2.2' } });
    assert.equal(again.status, 429, 'a made-up left-hand entry does not buy a new allowance');
    const other = await app.call('POST', '/acc/reg', { json: { code: 'ABCD-EFGH-IJKL-MNOP' }, headers: { 'x-forwarded-for': '192.0.2.3' } });
    assert.equal(other.status, 404);
  });
});

describe('load shedding for password hashing', () => {
  let app: TestService;
  let release: () => void = () => {};
  before(async () => {
    const real = createPasswordHasher({ ln: 4, r: 8, p: 1 });
    let gate = Promise.resolve();
    const slow: PasswordHasher = {
      ...real,
      hash: async (password) => (await gate, real.hash(password)),
    };
    app = await startTestService({ env: { HASH_CONCURRENCY: '1' }, passwords: slow });
    gate = new Promise((resolve) => (release = resolve));
  });
  after(async () => {
    release();
    await app.stop();
  });

  it('queues HASH_CONCURRENCY × 4 hashes, answers 503 past that, and keeps serving cheap requests', async () => {
    let answered = 0;
    const flood = Array.from({ length: 14 }, () => app.call('POST', '/acc/reg/code', { json: uniqueUser('flood') }).finally(() => (answered += 1)));
    // No hash ends before release(): the answers that come are refusals, and once nine have come,
    // the other five requests are all in the hashing slot and its queue.
    await waitUntil(async () => answered >= 9);
    const health = await app.call('GET', '/healthz');
    assert.equal(health.status, 200, 'the event loop is free while hashes wait');
    release();
    const responses = await Promise.all(flood);
    const statuses = responses.map((response) => response.status);
    const overloaded = responses.find((response) => response.status === 503)!;
    assert.equal(overloaded.json.type, 'urn:account-service:problem:overloaded');
    assert.equal(overloaded.headers['retry-after'], '1');
    assert.equal(statuses.filter((status) => status === 204).length, 5, `statuses: ${statuses}`);
    assert.equal(statuses.filter((status) => status === 503).length, 9, `statuses: ${statuses}`);
    const shed = await app.call('POST', '/acc/reg/code', { json: uniqueUser('after') });
    assert.equal(shed.status, 204, 'service resumes once the queue drains');
  });
});

/** The password hashing gauges of /metrics: scrypt computations running, and waiting for a slot. */
async function hashing(service: TestService): Promise<{ running: number; queued: number }> {
  const { text } = await service.call('GET', '/metrics');
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
  return { running: gauge('password_hash_running'), queued: gauge('password_hash_queued') };
}

describe('overload is never charged to the owner', () => {
  let app: TestService;
  let release: () => void = () => {};
  before(async () => {
    const real = createPasswordHasher({ ln: 4, r: 8, p: 1 });
    let gate = Promise.resolve();
    // Checks of unknown names wait at the gate, so that the hashing queue stays full.
    const slow: PasswordHasher = { ...real, verify: async (password, stored) => (stored === null && (await gate), real.verify(password, stored)) };
    app = await startTestService({ env: { HASH_CONCURRENCY: '1' }, passwords: slow });
    gate = new Promise((resolve) => (release = resolve));
  });
  after(async () => {
    release();
    await app.stop();
  });

  it('answers 503 to the owner while strangers fill the queue, and signs the owner in after it drains', { timeout: 30_000 }, async () => {
    const { user } = await registerAndSignIn(app);
    const flood = Array.from({ length: 5 }, (_, index) => passwordGrant(app, `stranger-${index}`, 'guess'));
    // The strangers hold the one slot and fill the queue of four.
    await waitUntil(async () => (await hashing(app)).queued === 4);
    assert.deepEqual(await hashing(app), { running: 1, queued: 4 });
    const during: number[] = [];
    for (let i = 0; i < 8; i += 1) during.push((await passwordGrant(app, user.name, user.pwd)).status);
    assert.deepEqual(during, [503, 503, 503, 503, 503, 503, 503, 503], 'the queue is full');
    release();
    await Promise.all(flood);
    assert.equal((await passwordGrant(app, user.name, user.pwd)).status, 200, 'no 503 was counted as a failure (it was 429 before)');
  });

  it('gives sign-in a slot beside a registration when HASH_CONCURRENCY is 1', { timeout: 30_000 }, async () => {
    let hold: () => void = () => {};
    const real = createPasswordHasher({ ln: 4, r: 8, p: 1 });
    let gate = Promise.resolve();
    const holding: PasswordHasher = { ...real, hash: async (password) => (await gate, real.hash(password)) };
    const single = await startTestService({ env: { HASH_CONCURRENCY: '1' }, passwords: holding });
    try {
      const { user } = await registerAndSignIn(single);
      gate = new Promise<void>((resolve) => (hold = resolve));
      const registration = single.call('POST', '/acc/reg/code', { json: uniqueUser('slot') });
      await waitUntil(async () => (await hashing(single)).running === 1);
      assert.equal((await single.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd } })).status, 200, 'while the registration holds the only slot');
      hold();
      assert.equal((await registration).status, 204);
    } finally {
      hold();
      await single.stop();
    }
  });
});
