import assert from 'node:assert/strict';
import crypto, { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { describe, it } from 'node:test';
import { createTokenService, ecTokenKeys, hmacTokenKeys, type SigningKey } from '../../src/core/tokens.ts';

const secret = Buffer.from('k'.repeat(32));
const options = { keys: hmacTokenKeys([secret]), ttlSeconds: 900, issuer: 'https://accounts.example', audience: null };
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
    const rotated = createTokenService({ ...options, keys: hmacTokenKeys([Buffer.from('n'.repeat(32)), secret]) });
    assert.equal(rotated.verifyToken(tokens.issueToken(account, session, now).token, now)?.sub, account);
  });

  it('tries every secret, with no early exit once one matches', (t) => {
    const keys = hmacTokenKeys([secret, Buffer.from('n'.repeat(32)), Buffer.from('o'.repeat(32))]);
    const { header, sign: signWith } = keys.signer();
    const data = `${header}.${encode(claims())}`;
    const signature = signWith(data);
    // The module's own binding of createHmac is replaced too (syncBuiltinESMExports), so its calls are counted.
    const hmac = t.mock.method(crypto, 'createHmac');
    syncBuiltinESMExports();
    try {
      assert.equal(keys.verify(header, data, signature), true, 'the first secret signed it');
    } finally {
      hmac.mock.restore();
      syncBuiltinESMExports();
    }
    assert.equal(hmac.mock.callCount(), 3, 'a MAC under each of the three secrets');
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

  it('needs at least one secret', () => {
    assert.throws(() => hmacTokenKeys([]));
  });
});

describe('ES256 tokens', () => {
  const keyPair = (kid: string): SigningKey => ({ kid, ...generateKeyPairSync('ec', { namedCurve: 'P-256' }) });
  const first = keyPair('first');
  const second = keyPair('second');
  let live: SigningKey[] = [first];
  const es = createTokenService({ ...options, keys: ecTokenKeys(() => live) });
  const halfOrder = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n / 2n;
  /** Signed here, outside the service; signed again until s is low, as only those are accepted. */
  const esSigned = (payload: object, header: object, key = first): string => {
    const data = `${encode(header)}.${encode(payload)}`;
    const signature = sign('sha256', Buffer.from(data), { key: key.privateKey!, dsaEncoding: 'ieee-p1363' });
    if (BigInt(`0x${signature.subarray(32).toString('hex')}`) > halfOrder) return esSigned(payload, header, key);
    return `${data}.${signature.toString('base64url')}`;
  };

  it('signs with the first key, its kid in the header, and verifies with every live key', () => {
    live = [first];
    const { token } = es.issueToken(account, session, now);
    assert.equal(Buffer.from(token.split('.')[0]!, 'base64url').toString(), '{"alg":"ES256","typ":"JWT","kid":"first"}');
    assert.equal(es.verifyToken(token, now)?.sub, account);
    live = [second, first];
    assert.match(Buffer.from(es.issueToken(account, session, now).token.split('.')[0]!, 'base64url').toString(), /"kid":"second"/);
    assert.equal(es.verifyToken(token, now)?.sub, account, 'the replaced key still verifies');
    live = [second];
    assert.equal(es.verifyToken(token, now), null, 'a removed key verifies nothing');
  });

  it('refuses other headers, a kid it does not hold, HS256 under the public key, and a DER signature', () => {
    live = [first];
    assert.notEqual(es.verifyToken(esSigned(claims(), { alg: 'ES256', typ: 'JWT', kid: 'first' }), now), null);
    assert.equal(es.verifyToken(esSigned(claims(), { alg: 'ES256', typ: 'JWT', kid: 'other' }), now), null);
    assert.equal(es.verifyToken(esSigned(claims(), { alg: 'ES256', typ: 'JWT' }), now), null, 'no kid');
    assert.equal(es.verifyToken(esSigned(claims(), { kid: 'first', alg: 'ES256', typ: 'JWT' }), now), null, 'reordered');
    assert.equal(es.verifyToken(esSigned(claims(), { alg: 'ES256', typ: 'JWT', kid: 'first' }, second), now), null, 'another key under the kid');
    const publicPem = first.publicKey.export({ format: 'pem', type: 'spki' });
    assert.equal(es.verifyToken(signed(claims(), { alg: 'HS256', typ: 'JWT', kid: 'first' }, Buffer.from(publicPem)), now), null, 'the public key as an HMAC secret');
    const data = `${encode({ alg: 'ES256', typ: 'JWT', kid: 'first' })}.${encode(claims())}`;
    const der = sign('sha256', Buffer.from(data), first.privateKey!).toString('base64url');
    assert.equal(es.verifyToken(`${data}.${der}`, now), null, 'only the 64-byte JWS form');
  });

  it('signs with a low s only, and refuses the high-s twin of a valid signature', () => {
    live = [first];
    const n = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
    const sOf = (token: string) => BigInt(`0x${Buffer.from(token.split('.')[2]!, 'base64url').subarray(32).toString('hex')}`);
    const tokensMade = Array.from({ length: 40 }, () => es.issueToken(account, session, now).token);
    assert.ok(tokensMade.every((token) => sOf(token) <= n / 2n), 'every s at most n / 2');
    const [token] = tokensMade as [string];
    const signature = Buffer.from(token.split('.')[2]!, 'base64url');
    const twin = Buffer.concat([signature.subarray(0, 32), Buffer.from((n - sOf(token)).toString(16).padStart(64, '0'), 'hex')]);
    const highS = `${token.split('.').slice(0, 2).join('.')}.${twin.toString('base64url')}`;
    assert.notEqual(es.verifyToken(token, now), null);
    assert.equal(es.verifyToken(highS, now), null, 'n - s verifies in ECDSA, and is refused here');
  });
});
