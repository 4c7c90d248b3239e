import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { jwtVerify } from 'jose';
import { ResourceOwnerPassword } from 'simple-oauth2';
import { eventsOf, signedIn, type Tokens } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { codeIn } from '../helpers/smtp.ts';
import { registerAndSignIn, startTestService, testSecret, uniqueUser, type TestService } from '../helpers/service.ts';

let app: TestService;
before(async () => {
  app = await startTestService({ env: { REFRESH_TTL: '7200' } });
});
after(async () => {
  await app.stop();
});

const refresh = (refresh_token: string) => app.call('POST', '/auth/token', { body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const revoke = (body: Record<string, string>) => app.call('POST', '/auth/revoke', { body: new URLSearchParams(body).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
const me = (token: string) => app.call('GET', '/acc/me', { token });
const sessionsOf = async (token: string) => (await app.call('GET', '/acc/me/sessions', { token })).json.sessions as Array<Record<string, unknown>>;

describe('refresh tokens', () => {
  it('rotate along a chain: each refresh gives a new pair and spends the old refresh token', async () => {
    const { user } = await registerAndSignIn(app);
    const first = await signedIn(app, user.name, user.pwd);
    const second = (await refresh(first.refresh_token)).json as Tokens;
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.equal(second.token_type, 'Bearer');
    const third = await refresh(second.refresh_token);
    assert.equal(third.status, 200);
    assert.equal(third.headers['cache-control'], 'no-store');
    assert.equal((await me(third.json.access_token)).status, 200);
    assert.equal((await me(first.access_token)).status, 200, 'access tokens of a live session stay valid until they expire');
    assert.equal((await sessionsOf(third.json.access_token)).length, 2, 'still two sessions: the helper\'s sign-in and this one');
  });

  it('answers a spent token within 10 s as a retry: a working successor, and the one issued before stops working', async () => {
    const { user } = await registerAndSignIn(app);
    const first = await signedIn(app, user.name, user.pwd);
    const lost = (await refresh(first.refresh_token)).json as Tokens;
    app.clock.advance(9);
    const retry = await refresh(first.refresh_token);
    assert.equal(retry.status, 200, 'a client whose answer was lost keeps its session');
    assert.equal((await me(retry.json.access_token)).status, 200);
    const next = await refresh(retry.json.refresh_token);
    assert.equal(next.status, 200, 'the successor of the retry works');
    assert.equal((await refresh(lost.refresh_token)).status, 400, 'the successor issued before the retry does not');
    assert.equal((await me(next.json.access_token)).status, 401, 'and presenting it ended the session (reuse detection)');
    const { access_token } = await signedIn(app, user.name, user.pwd);
    const types = (await eventsOf(app, access_token)).map((event) => event.type).filter((type) => type !== 'signed-in');
    assert.deepEqual(types.slice(0, 2), ['refresh-token-reused', 'refresh-retried']);
  });

  it('throws out a thief who rotated first as soon as the owner retries within the window', async () => {
    const { user } = await registerAndSignIn(app);
    const stolen = await signedIn(app, user.name, user.pwd);
    const thief = (await refresh(stolen.refresh_token)).json as Tokens;
    app.clock.advance(3);
    const owner = await refresh(stolen.refresh_token);
    assert.equal(owner.status, 200, 'the owner is not refused');
    assert.equal((await refresh(thief.refresh_token)).status, 400, "the thief's refresh token is dead");
    assert.equal((await me(owner.json.access_token)).status, 401, "and the thief's attempt ended the session: both parties sign in again");
    assert.equal((await refresh(owner.json.refresh_token)).status, 400);
  });

  it('treats a spent token as reuse once its successor was itself rotated, even within the window', async () => {
    const { user } = await registerAndSignIn(app);
    const first = await signedIn(app, user.name, user.pwd);
    const second = (await refresh(first.refresh_token)).json as Tokens;
    const third = (await refresh(second.refresh_token)).json as Tokens;
    assert.equal((await refresh(first.refresh_token)).status, 400);
    assert.equal((await refresh(third.refresh_token)).status, 400, 'the session ended');
  });

  it('revokes the whole session when a spent token comes back after 10 s (reuse detection)', async () => {
    const { user } = await registerAndSignIn(app);
    const first = await signedIn(app, user.name, user.pwd);
    const second = (await refresh(first.refresh_token)).json as Tokens;
    app.clock.advance(11);
    const reuse = await refresh(first.refresh_token);
    assert.equal(reuse.status, 400);
    assert.equal(reuse.json.error, 'invalid_grant');
    assert.equal((await refresh(second.refresh_token)).status, 400, 'the newest refresh token dies with the session');
    assert.equal((await me(second.access_token)).status, 401, 'and so do its access tokens, at once');
    const metrics = (await app.call('GET', '/metrics')).text;
    assert.match(metrics, /^refresh_token_reuses_total [1-9]/m);
    assert.match(metrics, /^refresh_token_rotations_total [1-9]/m);
  });

  it('keeps one chain under parallel refreshes with one token: each is served in turn, one live token remains', async () => {
    const { user } = await registerAndSignIn(app);
    const first = await signedIn(app, user.name, user.pwd);
    const responses = await Promise.all(Array.from({ length: 5 }, () => refresh(first.refresh_token)));
    assert.deepEqual(responses.map((response) => response.status), [200, 200, 200, 200, 200], 'within the window, the later ones are retries');
    const sessionId = (await sessionsOf(responses[0]!.json.access_token)).find((session) => session.current)!.id as string;
    const live = await app.service.sql`SELECT token_hash FROM refresh_tokens WHERE session_id = ${sessionId} AND spent_at IS NULL`;
    assert.equal(live.length, 1, 'exactly one live refresh token: the winner');
    const hashes = responses.map((response) => createHash('sha256').update(response.json.refresh_token as string).digest('hex'));
    assert.ok(hashes.includes((live[0]!.token_hash as Buffer).toString('hex')), 'and it is one of those handed out');
  });

  it('end with the session after REFRESH_TTL, however often they were refreshed', async () => {
    const { user } = await registerAndSignIn(app);
    let tokens = await signedIn(app, user.name, user.pwd);
    for (let i = 0; i < 3; i += 1) {
      app.clock.advance(2000);
      const next = await refresh(tokens.refresh_token);
      assert.equal(next.status, 200);
      tokens = next.json as Tokens;
    }
    app.clock.advance(1201);
    const late = await refresh(tokens.refresh_token);
    assert.equal(late.status, 400);
    assert.equal(late.json.error, 'invalid_grant');
  });

  it('refuses unknown refresh tokens and access tokens given as refresh tokens', async () => {
    const { user } = await registerAndSignIn(app);
    const tokens = await signedIn(app, user.name, user.pwd);
    for (const token of ['A'.repeat(43), tokens.access_token.slice(0, 256)]) {
      const response = await refresh(token);
      assert.equal(response.status, 400);
      assert.deepEqual(Object.keys(response.json), ['error', 'error_description']);
      assert.equal(response.json.error, 'invalid_grant');
    }
  });

  it('stores refresh tokens only as hashes', async () => {
    const { user } = await registerAndSignIn(app);
    const tokens = await signedIn(app, user.name, user.pwd);
    const dump = JSON.stringify(await app.service.sql`SELECT * FROM refresh_tokens`) + JSON.stringify(await app.service.sql`SELECT * FROM sessions`);
    assert.equal(dump.includes(tokens.refresh_token), false);
    assert.equal(dump.includes(Buffer.from(tokens.refresh_token, 'base64url').toString('hex')), false);
    assert.equal(app.logs.join('').includes(tokens.refresh_token), false, 'nor in the log');
  });
});

describe('POST /auth/revoke (RFC 7009)', () => {
  it('revokes the session of a refresh token, and of an access token, with or without a hint', async () => {
    const { user } = await registerAndSignIn(app);
    const byRefresh = await signedIn(app, user.name, user.pwd);
    const byAccess = await signedIn(app, user.name, user.pwd);
    const response = await revoke({ token: byRefresh.refresh_token, token_type_hint: 'refresh_token' });
    assert.equal(response.status, 200);
    assert.equal((await me(byRefresh.access_token)).status, 401);
    assert.equal((await refresh(byRefresh.refresh_token)).status, 400);
    assert.equal((await me(byAccess.access_token)).status, 200, 'other sessions stay');
    const json = await app.call('POST', '/auth/revoke', { json: { token: byAccess.access_token, token_type_hint: 'refresh_token' } });
    assert.equal(json.status, 200, 'a wrong hint is only a hint');
    assert.equal((await me(byAccess.access_token)).status, 401);
    assert.equal((await refresh(byAccess.refresh_token)).status, 400);
  });

  it('answers 200 for an unknown token, and RFC 6749 errors for a bad request', async () => {
    assert.equal((await revoke({ token: 'never-issued' })).status, 200);
    assert.equal((await revoke({ token: 'never-issued', token_type_hint: 'something_else' })).status, 200);
    for (const body of [{}, { token: '' }, { token_type_hint: 'access_token' }]) {
      const response = await revoke(body as Record<string, string>);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.json.error, 'invalid_request');
    }
    assert.equal((await app.call('POST', '/auth/revoke', { json: { token: 42 } })).json.error, 'invalid_request');
    assert.equal((await app.call('POST', '/auth/revoke', { body: 'token=a&token=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 400);
    assert.equal((await app.call('POST', '/auth/revoke', { body: 'token=a', headers: { 'content-type': 'text/plain' } })).status, 415);
  });
});

describe('GET and DELETE /acc/me/sessions', () => {
  it("lists the account's sessions with the caller's marked, and never another account's", async () => {
    const { user } = await registerAndSignIn(app);
    const mine = await signedIn(app, user.name, user.pwd, { userAgent: 'x'.repeat(300) });
    await signedIn(app, user.email, user.pwd, { userAgent: 'other-agent' });
    const other = await registerAndSignIn(app);
    const list = await sessionsOf(mine.access_token);
    assert.equal(list.length, 3, 'the helper sign-in and the two above');
    const current = list.filter((session) => session.current === true);
    assert.equal(current.length, 1);
    assert.equal(current[0]!.user_agent, 'x'.repeat(200), 'the user agent cut to 200 characters');
    assert.equal(current[0]!.client_address, '127.0.0.1');
    assert.match(String(current[0]!.created_at), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.match(String(current[0]!.id), /^[0-9a-f-]{36}$/);
    assert.deepEqual(Object.keys(current[0]!).sort(), ['client_address', 'created_at', 'current', 'id', 'last_used_at', 'user_agent']);
    const theirs = await sessionsOf(other.token);
    assert.equal(theirs.length, 1);
    assert.equal(theirs.some((session) => list.some((own) => own.id === session.id)), false);
  });

  it('revokes one session by id, and answers 404 for another account\'s session or a malformed id', async () => {
    const { user } = await registerAndSignIn(app);
    const keep = await signedIn(app, user.name, user.pwd);
    const drop = await signedIn(app, user.name, user.pwd);
    const other = await registerAndSignIn(app);
    const otherSession = (await sessionsOf(other.token))[0]!.id as string;
    const foreign = await app.call('DELETE', `/acc/me/sessions/${otherSession}`, { token: keep.access_token });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.json.type, 'urn:account-service:problem:unknown-session');
    assert.equal((await me(other.token)).status, 200, "the other account's session is untouched");
    for (const bad of ['not-a-uuid', otherSession.toUpperCase(), '00000000-0000-4000-8000-000000000000', `${otherSession}x`]) {
      assert.equal((await app.call('DELETE', `/acc/me/sessions/${bad}`, { token: keep.access_token })).status, 404, bad);
    }
    assert.equal((await app.call('DELETE', '/acc/me/sessions/', { token: keep.access_token })).status, 404, 'an empty id is no route');
    const dropId = (await sessionsOf(drop.access_token)).find((session) => session.current === true)!.id as string;
    assert.equal((await app.call('DELETE', `/acc/me/sessions/${dropId}`, { token: keep.access_token })).status, 204);
    assert.equal((await me(drop.access_token)).status, 401);
    assert.equal((await refresh(drop.refresh_token)).status, 400);
    assert.equal((await me(keep.access_token)).status, 200);
    assert.equal((await app.call('DELETE', `/acc/me/sessions/${dropId}`, { token: keep.access_token })).status, 404, 'gone');
    assert.equal((await app.call('GET', `/acc/me/sessions/${dropId}`, { token: keep.access_token })).headers.allow, 'DELETE');
  });

  it('signs out everywhere', async () => {
    const { user, token } = await registerAndSignIn(app);
    const other = await signedIn(app, user.name, user.pwd);
    assert.equal((await app.call('DELETE', '/acc/me/sessions', { token })).status, 204);
    for (const access of [token, other.access_token]) assert.equal((await me(access)).status, 401);
    assert.equal((await refresh(other.refresh_token)).status, 400);
    assert.equal((await app.call('GET', '/acc/me/sessions', { token })).status, 401);
  });

  it('ends every session at a password change and at a reset, refresh tokens included', async () => {
    const { user, token } = await registerAndSignIn(app);
    const other = await signedIn(app, user.name, user.pwd);
    assert.equal((await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: 'changed-password' } })).status, 204);
    assert.equal((await me(token)).status, 401, "the caller's own session too");
    assert.equal((await me(other.access_token)).status, 401);
    assert.equal((await refresh(other.refresh_token)).status, 400);

    const afterChange = await signedIn(app, user.name, 'changed-password');
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'reset-password' } })).status, 204);
    assert.equal((await me(afterChange.access_token)).status, 401);
    assert.equal((await refresh(afterChange.refresh_token)).status, 400);
  });
});

describe('races that must not leave a session alive', () => {
  it('revokes a session whatever a refresh racing it does, and never answers 500', async () => {
    const { user } = await registerAndSignIn(app);
    for (let round = 0; round < 12; round += 1) {
      const tokens = await signedIn(app, user.name, user.pwd);
      const ender =
        round % 3 === 0
          ? revoke({ token: tokens.refresh_token })
          : round % 3 === 1
            ? (async () => app.call('DELETE', `/acc/me/sessions/${(await sessionsOf(tokens.access_token)).find((session) => session.current)!.id}`, { token: tokens.access_token }))()
            : app.call('DELETE', '/acc/me/sessions', { token: tokens.access_token });
      const [refreshed, ended] = await Promise.all([refresh(tokens.refresh_token), ender]);
      assert.ok([200, 400].includes(refreshed.status), `refresh ${refreshed.status} ${refreshed.text}`);
      assert.ok([200, 204].includes(ended.status), `round ${round}: ${ended.status} ${ended.text}`);
      if (refreshed.status === 200) {
        assert.equal((await me(refreshed.json.access_token)).status, 401, `round ${round}: the refreshed pair dies with the session`);
        assert.equal((await refresh(refreshed.json.refresh_token)).status, 400);
      }
      assert.equal((await me(tokens.access_token)).status, 401);
    }
  });

  it('lets no sign-in with the old password outlive a reset that raced it', async () => {
    const { user } = await registerAndSignIn(app);
    app.clock.advance(61);
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
    const signIns = Array.from({ length: 8 }, (_, index) =>
      delay(index * 3).then(() => app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd }, headers: { 'x-forwarded-for': `192.0.2.${index}` } })),
    );
    const reset = app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'reset-in-race' } });
    const [resetAnswer, ...answers] = await Promise.all([reset, ...signIns]);
    assert.equal(resetAnswer.status, 204);
    for (const answer of answers.filter((response) => response.status === 200)) {
      assert.equal((await me(answer.json.access_token)).status, 401, 'a session started with the old password is gone');
    }
    // Sign-ins with the old password that lost the race count as failures of one client here
    // (no TRUST_PROXY: every request comes from 127.0.0.1); past five, level 1 of the throttle
    // makes the next attempt wait up to 2^(8 - 5) s. The clock moves past that.
    app.clock.advance(10);
    assert.equal((await sessionsOf((await signedIn(app, user.name, 'reset-in-race')).access_token)).length, 1, 'only the new sign-in');
  });
});

describe('sessions across instances and standard clients', () => {
  it('refuses a revoked session on a second instance at once', async () => {
    const database = await createTestDatabase();
    const one = await startTestService({ databaseUrl: database.url });
    // Started after the registration: each instance mails its own test SMTP server.
    const { token } = await registerAndSignIn(one);
    const two = await startTestService({ databaseUrl: database.url });
    try {
      assert.equal((await two.call('GET', '/acc/me', { token })).status, 200);
      assert.equal((await one.call('DELETE', '/acc/me/sessions', { token })).status, 204);
      assert.equal((await two.call('GET', '/acc/me', { token })).status, 401);
    } finally {
      await two.stop();
      await one.stop();
      await database.drop();
    }
  });

  it('serves an OAuth 2.0 client library unchanged: password grant, refresh, revocation', async () => {
    const user = uniqueUser('oauth');
    await registerAndSignIn(app, user);
    const client = new ResourceOwnerPassword({
      client: { id: 'any-client', secret: 'ignored' },
      auth: { tokenHost: app.url, tokenPath: '/auth/token', revokePath: '/auth/revoke' },
      options: { authorizationMethod: 'body' },
    });
    const token = await client.getToken({ username: user.name, password: user.pwd });
    assert.equal((await me(token.token.access_token as string)).status, 200);
    const refreshed = await token.refresh();
    assert.equal((await me(refreshed.token.access_token as string)).status, 200);
    await refreshed.revokeAll();
    assert.equal((await me(refreshed.token.access_token as string)).status, 401);
    await assert.rejects(client.getToken({ username: user.name, password: 'wrong-password' }), /Response Error: 400/);
  });

  it('issues tokens that a resource server verifies with jose, the secret, the issuer and the audience', async () => {
    const audienced = await startTestService({ env: { TOKEN_ISSUER: 'https://accounts.example', TOKEN_AUDIENCE: 'https://api.example' } });
    try {
      const { token } = await registerAndSignIn(audienced);
      const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(testSecret), { issuer: 'https://accounts.example', audience: 'https://api.example', algorithms: ['HS256'] });
      assert.deepEqual(protectedHeader, { alg: 'HS256', typ: 'JWT' });
      const account = (await audienced.call('GET', '/acc/me', { token })).json;
      assert.equal(payload.sub, account.id, 'sub is the public id GET /acc/me shows');
      assert.match(String(payload.sid), /^[0-9a-f-]{36}$/);
      assert.equal(typeof payload.jti, 'string');
      assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), 900);
      await assert.rejects(jwtVerify(token, new TextEncoder().encode(testSecret), { audience: 'https://other.example' }));
    } finally {
      await audienced.stop();
    }
  });

  it('shows the public id, never the row id, in GET /acc/me', async () => {
    const { user, token } = await registerAndSignIn(app);
    const account = (await me(token)).json;
    const [row] = await app.service.sql`SELECT id, public_id FROM accounts WHERE name = ${user.name}`;
    assert.equal(account.id, row!.public_id);
    assert.notEqual(account.id, String(row!.id));
    assert.deepEqual(Object.keys(account), ['id', 'name', 'email', 'phone', 'locale', 'created_at', 'totp_enabled']);
  });
});
