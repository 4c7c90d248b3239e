import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { createTokenService } from '../../src/sessions/tokens.ts';

const secret = Buffer.from('k'.repeat(32));
const options = { secrets: [secret], ttlSeconds: 900, issuer: 'https://accounts.example', audience: null };
const tokens = createTokenService(options);
const now = new Date('2026-11-21T10:00:00Z');
const account = '0b7c3f0e-5d3a-4e53-9a53-6f1f3c1d2e4a';
const session = '9d1f2a3b-4c5d-4e6f-8a7b-1c2d3e4f5a6b';
const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const signed = (payload: object, header: object = { alg: 'HS256', typ: 'JWT' }, key = secret) => {
  const data = `${encode(header)}.${encode(payload)}`;
  return `${data}.${createHmac('sha256', key).update(data).digest('base64url')}`;
};
const claims = (overrides: object = {}) => ({ iss: 'https://accounts.example', sub: account, sid: session, jti: 'a-jti', iat: 1795255200, exp: 1795256100, ...overrides });

describe('tokens', () => {
  it('issues a JWT with iss, sub, sid, jti, iat and exp, and the exact HS256 header', () => {
    const { token, expiresIn } = tokens.issueToken(account, session, now);
    assert.equal(expiresIn, 900);
    const [header, payload] = token.split('.').slice(0, 2).map((part) => Buffer.from(part, 'base64url').toString());
    assert.equal(header, '{"alg":"HS256","typ":"JWT"}');
    const parsed = JSON.parse(payload!);
    assert.deepEqual(Object.keys(parsed), ['iss', 'sub', 'sid', 'jti', 'iat', 'exp']);
    assert.deepEqual({ ...parsed, jti: 'x' }, { iss: 'https://accounts.example', sub: account, sid: session, jti: 'x', iat: 1795255200, exp: 1795256100 });
    assert.match(parsed.jti, /^[0-9a-f-]{36}$/);
    assert.notEqual(tokens.issueToken(account, session, now).token, token, 'a fresh jti each time');
    assert.deepEqual(tokens.verifyToken(token, now), parsed);
  });

  it('carries aud when an audience is configured, and then requires it', () => {
    const withAudience = createTokenService({ ...options, audience: 'api' });
    const token = withAudience.issueToken(account, session, now).token;
    assert.equal(withAudience.verifyToken(token, now)?.aud, 'api');
    assert.equal(tokens.verifyToken(token, now), null, 'a token with an audience is refused where none is configured');
    assert.equal(withAudience.verifyToken(tokens.issueToken(account, session, now).token, now), null, 'and one without where one is');
    assert.equal(createTokenService({ ...options, audience: 'other' }).verifyToken(token, now), null);
  });

  it('refuses a token at and after its expiry, and one issued in the future', () => {
    const { token } = tokens.issueToken(account, session, now);
    assert.notEqual(tokens.verifyToken(token, new Date(now.getTime() + 899_000)), null);
    assert.equal(tokens.verifyToken(token, new Date(now.getTime() + 900_000)), null);
    assert.equal(tokens.verifyToken(token, new Date(now.getTime() - 60_000)), null, 'iat a minute ahead of the clock');
    assert.notEqual(tokens.verifyToken(token, new Date(now.getTime() - 3_000)), null, 'a few seconds of clock difference between instances');
  });

  it('refuses malformed tokens', () => {
    const { token } = tokens.issueToken(account, session, now);
    for (const bad of ['', 'a.b', 'a.b.c.d', `${token}.`, token.replace('.', '..'), `${token}=`, token.slice(0, -1), ` ${token}`]) {
      assert.equal(tokens.verifyToken(bad, now), null, bad);
    }
  });

  it('refuses any header but the exact one: none, other algorithms, kid, reordered', () => {
    for (const header of [{ alg: 'none', typ: 'JWT' }, { alg: 'HS512', typ: 'JWT' }, { alg: 'RS256', typ: 'JWT' }, { alg: 'HS256' }, { typ: 'JWT', alg: 'HS256' }, { alg: 'HS256', typ: 'JWT', kid: '1' }, { alg: 'hs256', typ: 'JWT' }]) {
      assert.equal(tokens.verifyToken(signed(claims(), header), now), null, JSON.stringify(header));
    }
    assert.notEqual(tokens.verifyToken(signed(claims()), now), null);
  });

  it('refuses a signature made with a key it does not hold, and verifies with every configured one', () => {
    assert.equal(tokens.verifyToken(signed(claims(), undefined, Buffer.from('o'.repeat(32))), now), null);
    const rotated = createTokenService({ ...options, secrets: [Buffer.from('n'.repeat(32)), secret] });
    assert.equal(rotated.verifyToken(tokens.issueToken(account, session, now).token, now)?.sub, account);
  });

  it('refuses correctly signed tokens with bad or non-canonical claims', () => {
    for (const bad of [
      claims({ sub: 42 }),
      claims({ sub: account.toUpperCase() }),
      claims({ sub: '42' }),
      claims({ sid: ` ${session}` }),
      claims({ iss: 'https://evil.example' }),
      claims({ exp: 'never' }),
      claims({ iat: 1795255200.5 }),
      claims({ aud: 'api' }),
      claims({ extra: true }),
      { sub: account, iss: 'https://accounts.example', sid: session, jti: 'a-jti', iat: 1795255200, exp: 1795256100 },
    ]) {
      assert.equal(tokens.verifyToken(signed(bad), now), null, JSON.stringify(bad));
    }
    assert.equal(tokens.verifyToken(`${encode({ alg: 'HS256', typ: 'JWT' })}.${Buffer.from('not json').toString('base64url')}.x`, now), null);
  });

  it('remembers verified tokens only, checks the clock on every use, and stays bounded', () => {
    const service = createTokenService(options);
    const { token } = service.issueToken(account, session, now);
    const forged = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    assert.equal(service.verifyToken(forged, now), null);
    assert.equal(service.verifyToken(forged, now), null, 'a refused token stays refused');
    assert.notEqual(service.verifyToken(token, now), null);
    assert.equal(service.verifyToken(token, new Date(now.getTime() + 900_000)), null, 'a remembered token expires all the same');
    const many = Array.from({ length: 1_100 }, (_, index) => service.issueToken(account, session, new Date(now.getTime() + index)).token);
    for (const other of many) assert.notEqual(service.verifyToken(other, now), null);
    assert.notEqual(service.verifyToken(token, now), null, 'a token pushed out is checked again, and passes');
    assert.throws(() => {
      (service.verifyToken(token, now) as { sub: string }).sub = 'someone else';
    }, 'the remembered claims cannot be changed by a caller');
  });

  it('needs at least one secret', () => {
    assert.throws(() => createTokenService({ ...options, secrets: [] }));
  });
});
