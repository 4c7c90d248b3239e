import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPasswordHasher, type PasswordHasher } from '../../src/passwords.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

describe('brute-force throttling per account', () => {
  let app: TestService;
  before(async () => {
    app = await startTestService();
  });
  after(async () => {
    await app.stop();
  });
  const signIn = (username: string, password: string) => app.call('POST', '/auth/token', { json: { grant_type: 'password', username, password } });

  it('makes every attempt after five failures wait a doubling delay, before checking the password', async () => {
    const { user } = await registerAndSignIn(app);
    for (let i = 0; i < 5; i += 1) assert.equal((await signIn(user.name, 'wrong-password')).status, 400);
    const blocked = await signIn(user.email, user.pwd);
    assert.equal(blocked.status, 429, 'even the right password waits, and by address too');
    assert.equal(blocked.headers['retry-after'], '1');
    assert.equal(blocked.json.error, 'temporarily_unavailable');
    assert.equal(blocked.json.error_description, 'Try again in 1 second.');

    app.clock.advance(1);
    assert.equal((await signIn(user.name, 'wrong-password')).status, 400);
    const doubled = await signIn(user.name, user.pwd);
    assert.equal(doubled.headers['retry-after'], '2', 'the wait doubles');
    assert.equal(doubled.json.error_description, 'Try again in 2 seconds.');
    app.clock.advance(2);
    assert.equal((await signIn(user.name, user.pwd)).status, 200, 'the right password after the wait');
    assert.equal((await signIn(user.name, 'wrong-password')).status, 400, 'a success resets the count');
    assert.equal((await signIn(user.name, user.pwd)).status, 200);
  });

  it('throttles an unknown name exactly like a known one', async () => {
    const { user } = await registerAndSignIn(app);
    const known: string[] = [];
    const unknown: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const a = await signIn(user.name, 'wrong-password');
      const b = await signIn(`nobody-${user.name}`, 'wrong-password');
      known.push(`${a.status} ${a.headers['retry-after'] ?? ''} ${a.text}`);
      unknown.push(`${b.status} ${b.headers['retry-after'] ?? ''} ${b.text}`);
    }
    assert.deepEqual(unknown, known);
  });

  it('counts a wrong old password on PUT /acc/me/pwd', async () => {
    const { user, token } = await registerAndSignIn(app);
    const change = (old_pwd: string) => app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd, new_pwd: 'new-password-1' } });
    for (let i = 0; i < 5; i += 1) assert.equal((await change('wrong-password')).status, 403);
    const blocked = await change(user.pwd);
    assert.equal(blocked.status, 429);
    assert.equal(blocked.json.type, 'urn:account-service:problem:throttled');
    assert.equal(blocked.headers['retry-after'], '1');
    assert.equal((await signIn(user.name, user.pwd)).status, 429, 'sign-in shares the count');
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

  it('answers 429 with Retry-After past RATE_LIMIT requests a minute on each unauthenticated POST', async () => {
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
    const flood = Array.from({ length: 14 }, () => app.call('POST', '/acc/reg/code', { json: uniqueUser('flood') }));
    await new Promise((resolve) => setTimeout(resolve, 300));
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
