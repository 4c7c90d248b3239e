import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createPasswordHasher } from '../../src/core/passwords.ts';
import { createTokenService, hmacTokenKeys } from '../../src/core/tokens.ts';
import { registerAndSignIn, startTestService, testSecret, uniqueUser, type TestService } from '../helpers/service.ts';
import { waitUntil } from '../helpers/wait.ts';

let app: TestService;
let account: { user: ReturnType<typeof uniqueUser>; token: string };
before(async () => {
  app = await startTestService();
  account = await registerAndSignIn(app);
});
after(async () => {
  await app.stop();
});

const tokenRequest = (fields: Record<string, string>) => app.call('POST', '/auth/token', { json: { grant_type: 'password', ...fields } });
const form = (body: string) => app.call('POST', '/auth/token', { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });

describe('POST /auth/token', () => {
  it('issues a bearer token for the name or the address, as JSON or form', async () => {
    const byName = await tokenRequest({ username: account.user.name, password: account.user.pwd });
    assert.equal(byName.status, 200);
    assert.equal(byName.json.token_type, 'Bearer');
    assert.equal(byName.json.expires_in, 900);
    assert.match(byName.json.access_token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.match(byName.json.refresh_token, /^[\w-]{43}$/, '256 bits, base64url');
    assert.equal(byName.headers.pragma, 'no-cache');
    assert.equal(byName.headers['cache-control'], 'no-store');

    const byAddress = await form(new URLSearchParams({ grant_type: 'password', username: account.user.email.toUpperCase(), password: account.user.pwd }).toString());
    assert.equal(byAddress.status, 200);
    assert.equal((await app.call('GET', '/acc/me', { token: byAddress.json.access_token })).status, 200);
  });

  it('gives the same answer for an unknown user and a wrong password', async () => {
    const unknown = await tokenRequest({ username: 'nobody-here', password: account.user.pwd });
    const wrong = await tokenRequest({ username: account.user.name, password: 'not-the-password' });
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.json, { error: 'invalid_grant', error_description: 'The username or password is incorrect.' });
    assert.equal(wrong.text, unknown.text);
    assert.equal(wrong.status, unknown.status);
  });

  it('does the same scrypt work and the same SQL statements for an unknown user as for a wrong password', async () => {
    const calls: string[] = [];
    const statements: string[] = [];
    const real = createPasswordHasher({ ln: 4, r: 8, p: 1 });
    const counting = { ...real, verify: async (password: string, stored: string | null) => (calls.push('verify'), real.verify(password, stored)) };
    const counted = await startTestService({ passwords: counting, onQuery: (text) => statements.push(text.replace(/\s+/g, ' ').trim()) });
    const attempt = async (username: string) => {
      calls.length = 0;
      statements.length = 0;
      const response = await counted.call('POST', '/auth/token', { json: { grant_type: 'password', username, password: 'whatever1' } });
      // The failed sign-in's event is written after the answer, on both paths (writing nothing for an unknown name).
      await waitUntil(async () => statements.some((text) => text.startsWith('INSERT INTO security_events')));
      // The outbox worker polls the same pool; its statements are not the request's.
      return { response, calls: [...calls], statements: statements.filter((text) => !/outbox|_requests|^(begin|commit)$/i.test(text)) };
    };
    try {
      const { user } = await registerAndSignIn(counted);
      const unknown = await attempt('nobody-here');
      const wrong = await attempt(user.name);
      assert.deepEqual(unknown.calls, ['verify']);
      assert.deepEqual(wrong.calls, unknown.calls);
      assert.ok(unknown.statements.length >= 3, unknown.statements.join('\n'));
      assert.deepEqual(wrong.statements, unknown.statements, 'the same statements in the same order');
      assert.equal(wrong.response.text, unknown.response.text);
    } finally {
      await counted.stop();
    }
  });

  it('refuses a pending (not yet activated) account like an unknown one', async () => {
    const pending = uniqueUser();
    assert.equal((await app.call('POST', '/acc/reg/code', { json: pending })).status, 204);
    const response = await tokenRequest({ username: pending.name, password: pending.pwd });
    assert.equal(response.status, 400);
    assert.equal(response.json.error, 'invalid_grant');
  });

  it('answers malformed requests with RFC 6749 errors', async () => {
    const cases: Array<[Promise<Awaited<ReturnType<typeof form>>>, string]> = [
      [form('username=a&password=b'), 'invalid_request'],
      [form('grant_type=client_credentials&username=a&password=b'), 'unsupported_grant_type'],
      [form('grant_type=refresh_token'), 'invalid_request'],
      [form(`grant_type=refresh_token&refresh_token=${'a'.repeat(257)}`), 'invalid_request'],
      [form('grant_type=password&password=b'), 'invalid_request'],
      [form('grant_type=password&username=a'), 'invalid_request'],
      [form('grant_type=password&username=a&username=b&password=c'), 'invalid_request'],
      [form(`grant_type=password&username=${'a'.repeat(255)}&password=b`), 'invalid_request'],
      [app.call('POST', '/auth/token', { json: { grant_type: 'password', username: 5, password: 'x' } }), 'invalid_request'],
      [app.call('POST', '/auth/token', { body: '{"grant_type":', headers: { 'content-type': 'application/json' } }), 'invalid_request'],
    ];
    for (const [pending, error] of cases) {
      const response = await pending;
      assert.equal(response.status, 400, response.text);
      assert.equal(response.json.error, error, response.text);
      assert.equal(typeof response.json.error_description, 'string');
    }
    const wrongType = await app.call('POST', '/auth/token', { body: 'grant_type=password', headers: { 'content-type': 'text/plain' } });
    assert.equal(wrongType.status, 415);
    assert.equal(wrongType.json.error, 'invalid_request');
    const tooLarge = await form(`grant_type=password&username=a&password=${'x'.repeat(9000)}`);
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.json.error, 'invalid_request');
  });

  it('ignores unknown parameters, as RFC 6749 asks', async () => {
    const response = await tokenRequest({ username: account.user.name, password: account.user.pwd, scope: 'anything', client_id: 'x' });
    assert.equal(response.status, 200);
  });

  it('rehashes a password stored with outdated parameters at sign-in', async () => {
    const { user } = await registerAndSignIn(app);
    const weaker = await createPasswordHasher({ ln: 3, r: 8, p: 1 }).hash(user.pwd);
    await app.service.sql`UPDATE accounts SET password_hash = ${weaker} WHERE name = ${user.name}`;
    assert.equal((await tokenRequest({ username: user.name, password: user.pwd })).status, 200);
    const [row] = await app.service.sql`SELECT password_hash FROM accounts WHERE name = ${user.name}`;
    assert.match(row!.password_hash, /^\$scrypt\$ln=4,r=8,p=1\$/);
    assert.equal((await tokenRequest({ username: user.name, password: user.pwd })).status, 200, 'the new hash verifies');
  });
});

describe('bearer tokens on GET /acc/me', () => {
  const sign = (header: object, payload: object, secret = testSecret) => {
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const data = `${encode(header)}.${encode(payload)}`;
    return `${data}.${createHmac('sha256', secret).update(data).digest('base64url')}`;
  };
  const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());

  it('answers 401 with WWW-Authenticate when no token is sent', async () => {
    const response = await app.call('GET', '/acc/me');
    assert.equal(response.status, 401);
    assert.equal(response.headers['www-authenticate'], 'Bearer realm="accounts"');
    assert.equal(response.json.type, 'urn:account-service:problem:invalid-token');
  });

  it('refuses malformed, tampered, unsigned, foreign-key, expired and unknown-account tokens', async () => {
    const claims = claimsOf(account.token);
    const now = Math.floor(Date.now() / 1000);
    const [head, payload, signature] = account.token.split('.') as [string, string, string];
    const flipped = signature.slice(0, -2) + (signature.at(-2) === 'A' ? 'B' : 'A') + signature.at(-1);
    const forged = [
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer not-a-token',
      `Bearer ${head}.${payload}.${flipped}`,
      `Bearer ${head}.${Buffer.from(JSON.stringify({ ...claims, sub: '00000000-0000-4000-8000-000000000000' })).toString('base64url')}.${signature}`,
      `Bearer ${sign({ alg: 'none', typ: 'JWT' }, claims).split('.').slice(0, 2).join('.')}.`,
      `Bearer ${sign({ alg: 'none' }, claims)}`,
      `Bearer ${sign({ alg: 'HS512', typ: 'JWT' }, claims)}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT', kid: 'x' }, claims)}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, claims, 'another-secret-that-is-long-enough-000000')}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now - 7200, exp: now - 1 })}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub: '00000000-0000-4000-8000-000000000000' })}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sid: '00000000-0000-4000-8000-000000000000' })}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub: 'DROP TABLE' })}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub: claims.sub.toUpperCase() })}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iat: now + 600, exp: now + 1200 })}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iss: 'someone-else' })}`,
      `Bearer ${sign({ typ: 'JWT', alg: 'HS256' }, claims)}`,
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, ver: 1 })}`,
      `Bearer ${account.token} extra`,
    ];
    for (const authorization of forged) {
      const response = await app.call('GET', '/acc/me', { headers: { authorization } });
      assert.equal(response.status, 401, authorization);
      assert.match(String(response.headers['www-authenticate']), /^Bearer realm="accounts"/, authorization);
    }
    assert.equal((await app.call('GET', '/acc/me', { token: account.token })).status, 200, 'the genuine token still works');
  });

  it('refuses a request with two Authorization headers, even if both hold the genuine token', async () => {
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(new URL('/acc/me', app.url), { method: 'GET', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      // An array sends the header twice.
      req.setHeader('Authorization', [`Bearer ${account.token}`, `Bearer ${account.token}`]);
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 401);
  });

  it('refuses a refresh token used as an access token', async () => {
    const response = await tokenRequest({ username: account.user.name, password: account.user.pwd });
    assert.equal((await app.call('GET', '/acc/me', { token: response.json.refresh_token })).status, 401);
  });

  it('accepts tokens signed with any configured secret, signing with the first', async () => {
    const newSecret = 'a-new-secret-that-is-also-long-enough-42';
    const rotated = await startTestService({ env: { TOKEN_SECRET: `${newSecret},${testSecret}` } });
    try {
      const { token } = await registerAndSignIn(rotated);
      const options = { ttlSeconds: 900, issuer: 'account-service', audience: null };
      const { sub, sid } = claimsOf(token);
      const oldToken = createTokenService({ ...options, keys: hmacTokenKeys([Buffer.from(testSecret)]) }).issueToken(sub, sid, new Date()).token;
      assert.equal((await rotated.call('GET', '/acc/me', { token: oldToken })).status, 200, 'a token signed with the old secret verifies');
      assert.equal(createTokenService({ ...options, keys: hmacTokenKeys([Buffer.from(newSecret)]) }).verifyToken(token, new Date())?.sub, sub, 'new tokens are signed with the first secret');
    } finally {
      await rotated.stop();
    }
  });

  it('expires tokens after TOKEN_TTL', async () => {
    const { token } = await registerAndSignIn(app);
    app.clock.advance(901);
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401);
  });
});
