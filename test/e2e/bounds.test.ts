import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventsOf, signedIn, type Tokens } from '../helpers/accounts.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';

// What one account's owner, or a stranger, can make the service hold: sessions per account,
// the session list, the requests that make refresh tokens, and the activity view.

let app: TestService;
before(async () => {
  app = await startTestService({ env: { SESSIONS_PER_ACCOUNT: '3' } });
});
after(async () => {
  await app.stop();
});

const token = (json: object) => app.call('POST', '/auth/token', { json });
const sessionIdOf = (access: string) => JSON.parse(Buffer.from(access.split('.')[1]!, 'base64url').toString()).sid as string;

describe('sessions per account', () => {
  it('a sign-in beyond SESSIONS_PER_ACCOUNT ends the least recently used session, with an event', async () => {
    const { user, token: helperSession } = await registerAndSignIn(app);
    const first = await signedIn(app, user.name, user.pwd);
    const second = await signedIn(app, user.name, user.pwd);
    // The helper's session is the oldest; refreshed now, it becomes the most recently used.
    app.clock.advance(1);
    const helperRefreshed = await app.call('GET', '/acc/me', { token: helperSession });
    assert.equal(helperRefreshed.status, 200);
    const firstRotated = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
    assert.equal(firstRotated.status, 200);
    app.clock.advance(1);
    const third = await signedIn(app, user.name, user.pwd);

    // Three live at most: `second` was used least recently (never since its sign-in; the helper's never either, but is older).
    const listed = (await app.call('GET', '/acc/me/sessions', { token: third.access_token })).json.sessions as Array<{ id: string }>;
    assert.equal(listed.length, 3);
    const live = new Set(listed.map((session) => session.id));
    assert.ok(live.has(sessionIdOf(third.access_token)));
    assert.ok(live.has(sessionIdOf(first.access_token)), 'the refreshed session stays');
    assert.equal([sessionIdOf(helperSession), sessionIdOf(second.access_token)].filter((id) => live.has(id)).length, 1, 'exactly one of the two unused sessions ended');
    const ended = [helperSession, second.access_token].find((access) => !live.has(sessionIdOf(access)))!;
    assert.equal(sessionIdOf(ended), sessionIdOf(helperSession), 'the older of the two unused sessions ended');
    assert.equal((await app.call('GET', '/acc/me', { token: ended })).status, 401, 'its access token is refused at once');

    const evicted = (await eventsOf(app, third.access_token)).filter((event) => event.type === 'session-evicted');
    assert.deepEqual(evicted.map((event) => event.session_id), [sessionIdOf(ended)]);
  });

  it('keeps the count at the cap over many sign-ins', async () => {
    const { user } = await registerAndSignIn(app);
    const signIns: Tokens[] = [];
    for (let index = 0; index < 8; index += 1) signIns.push(await signedIn(app, user.name, user.pwd));
    const last = signIns[signIns.length - 1]!;
    const [row] = await app.service.sql`
      SELECT count(*)::int AS n FROM sessions WHERE account_id = (SELECT id FROM accounts WHERE name = ${user.name})`;
    assert.equal(row!.n, 3);
    assert.equal((await eventsOf(app, last.access_token)).filter((event) => event.type === 'session-evicted').length, 6);
  });

  it('lists at most SESSIONS_PER_ACCOUNT sessions, the most recently used first', async () => {
    const { user, token: access } = await registerAndSignIn(app);
    // Sessions left from before a lowered cap: the list stays bounded all the same.
    await app.service.sql`
      INSERT INTO sessions (id, account_id, created_at, last_used_at, expires_at, client_address, user_agent)
      SELECT gen_random_uuid(), a.id, now() - interval '1 hour', now() - interval '1 hour', now() + interval '1 day', '127.0.0.1', 'old'
      FROM accounts a, generate_series(1, 20) WHERE a.name = ${user.name}`;
    const listed = (await app.call('GET', '/acc/me/sessions', { token: access })).json.sessions as Array<{ id: string; current: boolean }>;
    assert.equal(listed.length, 3);
    assert.equal(listed[0]!.current, true);
  });
});

describe('the per-account rate limit', () => {
  it("counts sign-ins per account and network, and a session's own requests per session; strangers cannot spend it", async () => {
    const limited = await startTestService({ env: { ACCOUNT_RATE_LIMIT: '3' } });
    try {
      const { user } = await registerAndSignIn(limited); // one sign-in from 127.0.0.1
      const call = (json: object, localAddress = '127.0.0.1') => limited.call('POST', '/auth/token', { json, localAddress });
      for (let index = 0; index < 3; index += 1) {
        assert.equal((await call({ grant_type: 'password', username: user.name, password: 'not-the-password' })).status, 400, 'wrong passwords do not count');
      }
      const signedIn = (await call({ grant_type: 'password', username: user.name, password: user.pwd })).json as Tokens; // two
      for (let index = 0; index < 3; index += 1) {
        assert.equal((await limited.call('GET', '/acc/me/sessions', { token: signedIn.access_token })).status, 200);
      }
      const listing = await limited.call('GET', '/acc/me/sessions', { token: signedIn.access_token });
      assert.equal(listing.status, 429, 'the session spent its own allowance');
      assert.equal(listing.json.type, 'urn:account-service:problem:account-rate-limited');
      const refused = await call({ grant_type: 'refresh_token', refresh_token: signedIn.refresh_token });
      assert.equal(refused.status, 429, 'a refresh counts in its session\'s allowance');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      const [spent] = await limited.service.sql`SELECT count(*)::int AS n FROM refresh_tokens WHERE spent_at IS NOT NULL`;
      assert.equal(spent!.n, 0, 'a refused refresh spends nothing: the token works once the limit frees');

      const third = (await call({ grant_type: 'password', username: user.name, password: user.pwd })).json as Tokens; // three
      assert.equal((await limited.call('GET', '/acc/me/sessions', { token: third.access_token })).status, 200, 'another session is not held up');
      const signInRefused = await call({ grant_type: 'password', username: user.name, password: user.pwd });
      assert.equal(signInRefused.status, 429, 'a fourth sign-in from one network in a minute');
      const elsewhere = await call({ grant_type: 'password', username: user.name, password: user.pwd }, '127.0.0.2');
      assert.equal(elsewhere.status, 200, 'a sign-in from another network is not held up');
      const [sessions] = await limited.service.sql`SELECT count(*)::int AS n FROM sessions`;
      assert.equal(sessions!.n, 4, 'the refused sign-in started no session');
    } finally {
      await limited.stop();
    }
  });
});

describe('the activity view', () => {
  it("keeps the owner's own events visible under strangers' failed sign-ins and reset requests", async () => {
    const { user, token: access } = await registerAndSignIn(app);
    // Strangers' events, newer than the owner's: as many as the view shows, of both kinds.
    await app.service.sql`
      INSERT INTO security_events (account_id, type, occurred_at, client_address)
      SELECT a.id, CASE WHEN n % 2 = 0 THEN 'reset-requested' ELSE 'sign-in-failed' END, now() + n * interval '1 second', '192.0.2.1'
      FROM accounts a, generate_series(1, 60) AS n WHERE a.name = ${user.name}`;
    const events = await eventsOf(app, access);
    const strangers = events.filter((event) => event.type === 'reset-requested' || event.type === 'sign-in-failed');
    assert.equal(strangers.length, 10, 'failed sign-ins and reset requests share one cap');
    assert.deepEqual(events.filter((event) => !strangers.includes(event)).map((event) => event.type).sort(), ['activated', 'signed-in']);
  });
});

describe('lone surrogates', () => {
  it('are refused with 400 naming the field, at registration and at sign-in, instead of colliding', async () => {
    const registration = await app.call('POST', '/acc/reg/code', { json: { name: 'surrogate', email: 'surrogate@example.com', pwd: '\ud800abcdef' } });
    assert.equal(registration.status, 400);
    assert.deepEqual(registration.json['invalid-params'], [{ name: 'pwd', reason: 'must be well-formed Unicode without NUL (no lone surrogate, no U+0000)' }]);

    const { user } = await registerAndSignIn(app);
    // A trailing NUL vanished in scrypt's key padding: "correct-horse\0" signed in as "correct-horse".
    for (const password of ['\udfffabcdef', '\ud800abcdef', `${user.pwd}\u0000`, `${user.pwd}\u0000\u0000`]) {
      const response = await token({ grant_type: 'password', username: user.name, password });
      assert.equal(response.status, 400);
      assert.equal(response.json.error, 'invalid_request');
      assert.match(response.json.error_description, /^password must be well-formed Unicode/);
    }
    const change = await app.call('PUT', '/acc/me/pwd', { token: await signedIn(app, user.name, user.pwd).then((tokens) => tokens.access_token), json: { old_pwd: user.pwd, new_pwd: '\udc00abcdef' } });
    assert.equal(change.status, 400);
    assert.equal(change.json['invalid-params'][0].name, 'new_pwd');
  });
});
