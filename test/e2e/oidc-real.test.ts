// Sign-in with a real OpenID provider: the npm package oidc-provider (certified), on loopback,
// its own login and consent pages driven over HTTP (helpers/oidc-real.ts). The link, the
// sign-in, the refresh and the second factor, as an application does them.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { enableTotp, totpStepOf } from '../helpers/accounts.ts';
import { form } from '../helpers/http.ts';
import { startRealProvider, type RealProvider } from '../helpers/oidc-real.ts';
import { codeIn } from '../helpers/smtp.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

const issuerBase = 'http://127.0.0.1:9';
const appReturn = 'http://127.0.0.1:7/done';
const callbackUrl = `${issuerBase}/auth/oidc/corp/callback`;

let app: TestService;
let provider: RealProvider;
const accounts: Record<string, { email: string; email_verified: boolean }> = {};

before(async () => {
  provider = await startRealProvider({ redirectUris: [callbackUrl], accounts });
  app = await startTestService({
    env: {
      TOKEN_ISSUER: issuerBase, OIDC_PROVIDERS: 'corp', OIDC_REDIRECT_URIS: appReturn, OIDC_CORP_ISSUER: provider.issuer,
      OIDC_CORP_CLIENT_ID: provider.clientId, OIDC_CORP_CLIENT_SECRET: provider.clientSecret,
    },
  });
});

after(async () => {
  await app?.stop();
  await provider?.close();
});

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** The provider's redirect to the service's callback, requested on the service's real port. */
async function backAtApplication(redirect: string, cookie?: string): Promise<URLSearchParams> {
  const url = new URL(redirect);
  assert.equal(`${url.origin}${url.pathname}`, callbackUrl);
  const answer = await app.call('GET', `${url.pathname}${url.search}`, { headers: cookie === undefined ? {} : { cookie } });
  assert.equal(answer.status, 302, answer.text);
  const location = new URL(answer.headers.location!);
  assert.equal(`${location.origin}${location.pathname}`, appReturn);
  return location.searchParams;
}

describe('sign-in with oidc-provider, a real OpenID provider', () => {
  it('links, signs in, refreshes, and asks for the second factor', async () => {
    const { user, token } = await registerAndSignIn(app, uniqueUser('corp'));
    const sub = `employee-${process.pid}`;
    accounts[sub] = { email: user.email, email_verified: true };

    const before = app.smtp.messages.length;
    const linkPkce = pkce();
    const options = await app.call('POST', '/acc/me/identities/options', {
      token, json: { provider: 'corp', pwd: user.pwd, redirect_uri: appReturn, state: 'link', code_challenge: linkPkce.challenge },
    });
    assert.equal(options.status, 200, options.text);
    const mail = await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'Your code to link a sign-in provider' && app.smtp.messages.indexOf(m) >= before);
    const linkBack = await backAtApplication(await provider.signIn(options.json.authorization_url, sub));
    assert.equal(linkBack.get('state'), 'link');
    const linked = await app.call('POST', '/acc/me/identities', {
      token, json: { code: linkBack.get('code'), code_verifier: linkPkce.verifier, redirect_uri: appReturn, email_code: codeIn(mail) },
    });
    assert.equal(linked.status, 201, linked.text);

    const signIn = async () => {
      const { verifier, challenge } = pkce();
      const query = new URLSearchParams({ redirect_uri: appReturn, state: 'sign-in', code_challenge: challenge, code_challenge_method: 'S256' });
      const started = await app.call('GET', `/auth/oidc/corp?${query}`);
      assert.equal(started.status, 302, started.text);
      const cookie = String(started.headers['set-cookie']).split(';')[0]!;
      const back = await backAtApplication(await provider.signIn(started.headers.location!, sub), cookie);
      assert.equal(back.get('state'), 'sign-in');
      assert.equal(back.get('iss'), issuerBase);
      return { code: back.get('code')!, verifier };
    };
    const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
      app.call('POST', '/auth/token', form({ grant_type: 'authorization_code', code, redirect_uri: appReturn, code_verifier: verifier, ...extra }));

    const first = await signIn();
    const tokens = await exchange(first.code, first.verifier);
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal((await app.call('GET', '/acc/me', { token: tokens.json.access_token })).json.name, user.name);
    const refreshed = await app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token }));
    assert.equal(refreshed.status, 200, refreshed.text);

    const { secret } = await enableTotp(app, token, user);
    app.clock.advance(30);
    const second = await signIn();
    const asked = await exchange(second.code, second.verifier);
    assert.equal(asked.json.error, 'mfa_required');
    const answered = await exchange(second.code, second.verifier, { otp: referenceTotp(secret, totpStepOf(app) * 30) });
    assert.equal(answered.status, 200, answered.text);
  });
});
