import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTokenService } from '../src/tokens.ts';

const secret = Buffer.from('k'.repeat(32));
const tokens = createTokenService([secret], 3600);
const now = new Date('2026-11-21T10:00:00Z');

describe('tokens', () => {
  it('issues a JWT with sub, ver, iat and exp', () => {
    const { token, expiresIn } = tokens.issueToken('42', 3, now);
    assert.equal(expiresIn, 3600);
    const [header, payload] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()) as unknown);
    assert.deepEqual(header, { alg: 'HS256', typ: 'JWT' });
    assert.deepEqual(payload, { sub: '42', ver: 3, iat: 1795255200, exp: 1795258800 });
    assert.deepEqual(tokens.verifyToken(token, now), payload);
  });

  it('refuses a token at and after its expiry', () => {
    const { token } = tokens.issueToken('42', 1, now);
    assert.notEqual(tokens.verifyToken(token, new Date(now.getTime() + 3599_000)), null);
    assert.equal(tokens.verifyToken(token, new Date(now.getTime() + 3600_000)), null);
  });

  it('refuses malformed tokens', () => {
    const { token } = tokens.issueToken('42', 1, now);
    for (const bad of ['', 'a.b', 'a.b.c.d', `${token}.`, token.replace('.', '..'), `${token}=`, token.slice(0, -1), ` ${token}`]) {
      assert.equal(tokens.verifyToken(bad, now), null, bad);
    }
  });

  it('refuses a signature made with a key it does not hold', () => {
    const other = createTokenService([Buffer.from('o'.repeat(32))], 3600);
    assert.equal(tokens.verifyToken(other.issueToken('42', 1, now).token, now), null);
  });

  it('verifies with every configured secret', () => {
    const old = createTokenService([secret], 3600).issueToken('7', 1, now).token;
    const rotated = createTokenService([Buffer.from('n'.repeat(32)), secret], 3600);
    assert.equal(rotated.verifyToken(old, now)?.sub, '7');
  });

  it('refuses a correctly signed token with bad claims', async () => {
    const { createHmac } = await import('node:crypto');
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const signed = (payload: object) => {
      const data = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(payload)}`;
      return `${data}.${createHmac('sha256', secret).update(data).digest('base64url')}`;
    };
    assert.equal(tokens.verifyToken(signed({ sub: 42, ver: 1, iat: 0, exp: 9e9 }), now), null);
    assert.equal(tokens.verifyToken(signed({ sub: '42', iat: 0, exp: 9e9 }), now), null);
    assert.equal(tokens.verifyToken(signed({ sub: '42', ver: 1, iat: 0, exp: 'never' }), now), null);
    assert.equal(tokens.verifyToken(`${encode({ alg: 'HS256' })}.${Buffer.from('not json').toString('base64url')}.x`, now), null);
    assert.notEqual(tokens.verifyToken(signed({ sub: '42', ver: 1, iat: 0, exp: 9e9 }), now), null);
  });

  it('needs at least one secret', () => {
    assert.throws(() => createTokenService([], 60));
  });
});
