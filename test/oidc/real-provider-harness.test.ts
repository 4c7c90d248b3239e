// The harness of oidc-real.ts against the provider it starts: a sign-in through the provider's own
// login and consent pages gives a code for the registered callback, with the same state and the
// issuer as `iss` (RFC 9207), and the code gives an ID token for that account.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startRealProvider, type RealProvider } from '../helpers/oidc-real.ts';

const redirectUri = 'http://127.0.0.1:1/callback';
const sub = 'user-4711';
const email = 'ada@example.org';

function payloadOf(jwt: string): Record<string, unknown> {
  const parts = jwt.split('.');
  assert.equal(parts.length, 3, 'a signed JWT has three parts');
  return JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('the real OpenID provider harness (oidc-provider)', () => {
  let provider: RealProvider;
  let discovery: Record<string, unknown>;

  before(async () => {
    provider = await startRealProvider({
      redirectUris: [redirectUri],
      accounts: {
        [sub]: { email, email_verified: true },
        other: { email: 'other@example.org', email_verified: false },
      },
    });
    const response = await fetch(`${provider.issuer}/.well-known/openid-configuration`);
    assert.equal(response.status, 200);
    discovery = (await response.json()) as Record<string, unknown>;
  });

  after(async () => {
    await provider?.close();
  });

  it('names its loopback issuer, with the port, in its discovery document', () => {
    assert.match(provider.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(discovery.issuer, provider.issuer);
    assert.equal(discovery.authorization_response_iss_parameter_supported, true);
    assert.deepEqual(discovery.code_challenge_methods_supported, ['S256']);
  });

  it('signs a user in through its login and consent pages, and the code gives an ID token for them', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const nonce = randomBytes(16).toString('base64url');
    const authorization = new URL(String(discovery.authorization_endpoint));
    authorization.search = new URLSearchParams({
      response_type: 'code',
      client_id: provider.clientId,
      redirect_uri: redirectUri,
      scope: 'openid email',
      state,
      nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();

    const location = await provider.signIn(authorization.href, sub);

    assert.ok(location.startsWith(`${redirectUri}?`), location);
    const callback = new URL(location);
    const code = callback.searchParams.get('code');
    assert.ok(code !== null && code !== '', location);
    assert.equal(callback.searchParams.get('state'), state);
    assert.equal(callback.searchParams.get('iss'), provider.issuer);
    assert.equal(callback.searchParams.get('error'), null);

    const basic = Buffer.from(
      `${encodeURIComponent(provider.clientId)}:${encodeURIComponent(provider.clientSecret)}`,
    ).toString('base64');
    const response = await fetch(String(discovery.token_endpoint), {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier,
      }).toString(),
    });
    const tokens = (await response.json()) as Record<string, unknown>;
    assert.equal(response.status, 200, JSON.stringify(tokens));
    assert.equal(typeof tokens.id_token, 'string');
    const claims = payloadOf(tokens.id_token as string);
    assert.equal(claims.sub, sub);
    assert.equal(claims.email, email);
    assert.equal(claims.email_verified, true);
    assert.equal(claims.nonce, nonce);
    assert.equal(claims.aud, provider.clientId);
    assert.equal(claims.iss, provider.issuer);
  });
});
