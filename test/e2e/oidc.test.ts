// Sign-in with an OpenID provider, end to end over HTTP, against the tests' own provider that
// misbehaves on demand (helpers/oidc-fake.ts): the link, the sign-in, the second factor, and
// every check of the callback and the ID token. The real provider's run is oidc-real.test.ts.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { eventsOf, enableTotp, totpStepOf } from '../helpers/accounts.ts';
import { untilQueuesDrained } from '../helpers/wait.ts';
import { form, type HttpResult } from '../helpers/http.ts';
import { startFakeProvider, type FakeProvider, type Faults, type User } from '../helpers/oidc-fake.ts';
import { codeIn } from '../helpers/smtp.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

/** The service's public URL as configured; the test calls its real port, and maps the callback there. */
const issuerBase = 'http://127.0.0.1:9';
const appReturn = 'http://127.0.0.1:7/signed-in';

let app: TestService;
let alpha: FakeProvider;
let beta: FakeProvider;

before(async () => {
  alpha = await startFakeProvider({ algorithm: 'RS256' });
  beta = await startFakeProvider({ algorithm: 'EdDSA' });
  const provider = (name: string, p: FakeProvider) => ({
    [`OIDC_${name}_ISSUER`]: p.issuer, [`OIDC_${name}_CLIENT_ID`]: p.clientId, [`OIDC_${name}_CLIENT_SECRET`]: p.clientSecret,
  });
  app = await startTestService({
    env: {
      TOKEN_ISSUER: issuerBase, OIDC_PROVIDERS: 'alpha,beta', OIDC_REDIRECT_URIS: appReturn, ...provider('ALPHA', alpha), ...provider('BETA', beta),
      OIDC_BETA_TRUST_EMAIL: 'true',
    },
  });
});

after(async () => {
  await app?.stop();
  await alpha?.close();
  await beta?.close();
});

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** GET /auth/oidc/<name> as a browser: the provider's URL and the cookie the service set. */
async function startSignIn(name: string, state = 'app-state', challenge = pkce().challenge) {
  const query = new URLSearchParams({ redirect_uri: appReturn, state, code_challenge: challenge, code_challenge_method: 'S256' });
  const started = await app.call('GET', `/auth/oidc/${name}?${query}`);
  assert.equal(started.status, 302, started.text);
  assert.equal(new URL(started.headers.location!).searchParams.get('prompt'), null, 'a sign-in leaves the prompt to the provider');
  const cookie = String(started.headers['set-cookie']).split(';')[0]!;
  return { location: started.headers.location!, cookie };
}

/** The browser's return to the service's callback from the provider's redirect. */
function callback(providerRedirect: string, cookie?: string): Promise<HttpResult> {
  const url = new URL(providerRedirect);
  assert.equal(url.origin, issuerBase, 'the provider sends the browser to TOKEN_ISSUER');
  return app.call('GET', `${url.pathname}${url.search}`, { headers: cookie === undefined ? {} : { cookie } });
}

/** Where the callback sends the browser back to the application, with its query. */
function returned(answer: HttpResult): URLSearchParams {
  assert.equal(answer.status, 302, answer.text);
  const location = new URL(answer.headers.location!);
  assert.equal(`${location.origin}${location.pathname}`, appReturn);
  return location.searchParams;
}

/** A whole sign-in through `provider` as `user`, with faults: what the callback sent the application back with. */
async function signInThrough(name: string, provider: FakeProvider, user: User, faults: Faults = {}) {
  const { verifier, challenge } = pkce();
  const { location, cookie } = await startSignIn(name, 'app-state', challenge);
  const back = returned(await callback(provider.authorize(location, user, faults), cookie));
  return { back, verifier };
}

const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
  app.call('POST', '/auth/token', form({ grant_type: 'authorization_code', code, redirect_uri: appReturn, code_verifier: verifier, ...extra }));

/** Links `user`'s identity at `name` to the signed-in account, through the mailbox, the provider and the callback. */
async function link(name: string, provider: FakeProvider, token: string, owner: { email: string; pwd: string }, user: User) {
  const { back, verifier, emailCode } = await startLink(name, provider, token, owner, user);
  assert.equal(back.get('state'), 'link-state');
  assert.equal(back.get('iss'), issuerBase);
  return app.call('POST', '/acc/me/identities', { token, json: { code: back.get('code'), code_verifier: verifier, redirect_uri: appReturn, email_code: emailCode } });
}

/** The first step of a link and the trip to the provider: where the callback sent the browser, the verifier, the mailed code. */
async function startLink(name: string, provider: FakeProvider, token: string, owner: { email: string; pwd: string }, user: User) {
  const before = app.smtp.messages.length;
  const { verifier, challenge } = pkce();
  const options = await app.call('POST', '/acc/me/identities/options', {
    token, json: { provider: name, pwd: owner.pwd, redirect_uri: appReturn, state: 'link-state', code_challenge: challenge },
  });
  assert.equal(options.status, 200, options.text);
  assert.equal(new URL(options.json.authorization_url).searchParams.get('prompt'), 'consent', 'a link is never one silent redirect');
  const mail = await app.smtp.waitFor((m) => m.to === owner.email && m.subject === 'Your code to link a sign-in provider' && app.smtp.messages.indexOf(m) >= before);
  const back = returned(await callback(provider.authorize(options.json.authorization_url, user)));
  return { back, verifier, emailCode: codeIn(mail) };
}

let subjects = 0;
const newUser = (email?: string): User => ({ sub: `subject-${process.pid}-${(subjects += 1)}`, ...(email === undefined ? {} : { email }) });

describe('sign-in with an OpenID provider', () => {
  it('links an identity through the mailbox, then signs in with it, refreshes, and lists it', async () => {
    const { user: owner, token } = await registerAndSignIn(app, uniqueUser('oidc'));
    const identity = newUser(owner.email);
    const linked = await link('alpha', alpha, token, owner, identity);
    assert.equal(linked.status, 201, linked.text);
    assert.equal(linked.json.provider, 'alpha');
    await app.smtp.waitFor((m) => m.to === owner.email && m.subject === 'A sign-in provider was linked');
    const { back, verifier } = await signInThrough('alpha', alpha, identity);
    assert.equal(back.get('state'), 'app-state');
    assert.equal(back.get('iss'), issuerBase, 'RFC 9207: the service names itself');
    const tokens = await exchange(back.get('code')!, verifier);
    assert.equal(tokens.status, 200, tokens.text);
    const me = await app.call('GET', '/acc/me', { token: tokens.json.access_token });
    assert.equal(me.json.name, owner.name);
    const refreshed = await app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token }));
    assert.equal(refreshed.status, 200, refreshed.text);
    const listed = await app.call('GET', '/acc/me/identities', { token });
    assert.equal(listed.json.identities.length, 1);
    assert.notEqual(listed.json.identities[0].last_used_at, null);
    const kinds = (await eventsOf(app, token)).map((event) => event.type);
    assert.ok(kinds.includes('identity-linked'));
    // The code was used once.
    const again = await exchange(back.get('code')!, verifier);
    assert.equal(again.status, 400);
    assert.equal(again.json.error, 'invalid_grant');
  });

  it('still asks for the second factor, and keeps the code for the same request with otp', async () => {
    const { user: owner, token } = await registerAndSignIn(app, uniqueUser('oidc-2fa'));
    const identity = newUser();
    assert.equal((await link('beta', beta, token, owner, identity)).status, 201);
    const { secret } = await enableTotp(app, token, owner);
    app.clock.advance(30);
    const { back, verifier } = await signInThrough('beta', beta, identity);
    const asked = await exchange(back.get('code')!, verifier);
    assert.equal(asked.status, 400);
    assert.equal(asked.json.error, 'mfa_required');
    const answered = await exchange(back.get('code')!, verifier, { otp: referenceTotp(secret, totpStepOf(app) * 30) });
    assert.equal(answered.status, 200, answered.text);
  });

  it('refuses every ID token or answer that a check refuses, and gives the application no code', async () => {
    const { user: owner, token } = await registerAndSignIn(app, uniqueUser('oidc-neg'));
    const identity = newUser();
    assert.equal((await link('alpha', alpha, token, owner, identity)).status, 201);
    const cases: [string, Faults][] = [
      ['a wrong iss in the ID token', { iss: 'http://127.0.0.1:1' }],
      ['the other provider\'s iss (mix-up)', { iss: beta.issuer }],
      ['a wrong aud', { aud: 'someone-else' }],
      ['several audiences without azp', { aud: [alpha.clientId, 'other'] }],
      ['an azp that is another client', { azp: 'other' }],
      ['no nonce', { nonce: null }],
      ['another nonce (a replayed ID token)', { nonce: 'replayed' }],
      ['a broken signature', { signing: 'broken-signature' }],
      ['a key that is not the one its kid names', { signing: 'wrong-key' }],
      ['a key that is not in the JWKS', { signing: 'unknown-key' }],
      ['alg none', { signing: 'none' }],
      ['HS256 keyed with the client secret', { signing: 'hs256-secret' }],
      ['an expired ID token', { expIn: -600 }],
      ['an ID token issued in the future', { iatIn: 3600 }],
      ['an iss parameter of the other provider (mix-up)', { issParam: beta.issuer }],
      ['no iss parameter from a provider that says it sends one', { issParam: null }],
      ['an error from the provider', { error: 'access_denied' }],
      ['a crit header naming an extension', { crit: ['exp'] }],
      ['an ID token not valid yet (nbf)', { nbfIn: 3600 }],
      ['a NUL in sub', { sub: `${identity.sub}\u0000` }],
      ['a token answer of 64 MiB', { hugeAnswerMiB: 64 }],
    ];
    for (const [name, faults] of cases) {
      const { back } = await signInThrough('alpha', alpha, identity, faults);
      assert.equal(back.get('code'), null, name);
      assert.ok(back.get('error'), name);
      assert.equal(back.get('state'), 'app-state', name);
    }
    const { back } = await signInThrough('alpha', alpha, identity);
    assert.ok(back.get('code'), 'the same identity signs in when nothing is wrong');
  });

  it('refuses a replayed state, another browser, an unlisted redirect_uri and a wrong verifier', async () => {
    const { user: owner, token } = await registerAndSignIn(app, uniqueUser('oidc-flow'));
    const identity = newUser();
    assert.equal((await link('alpha', alpha, token, owner, identity)).status, 201);
    const { location, cookie } = await startSignIn('alpha');
    const redirect = alpha.authorize(location, identity);
    const elsewhere = await callback(redirect, 'oidc_browser=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    assert.equal(elsewhere.status, 400);
    assert.equal(elsewhere.headers.location, undefined);
    assert.equal((await callback(redirect)).status, 400, 'no cookie');
    assert.equal((await callback(redirect, cookie)).status, 302, 'the browser that started it');
    const replayed = await callback(redirect, cookie);
    assert.equal(replayed.status, 400);
    assert.equal(replayed.json.type, 'urn:account-service:problem:unknown-attempt');
    const unlisted = await app.call('GET', `/auth/oidc/alpha?${new URLSearchParams({ redirect_uri: 'https://evil.example/cb', state: 's', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`);
    assert.equal(unlisted.status, 400);
    assert.equal(unlisted.headers.location, undefined);
    // A cookie planted in the browser is not taken: every start sets a fresh one.
    const planted = 'oidc_browser=' + 'P'.repeat(43);
    const query = new URLSearchParams({ redirect_uri: appReturn, state: 's', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const start = await app.call('GET', `/auth/oidc/alpha?${query}`, { headers: { cookie: planted } });
    assert.equal(start.status, 302);
    assert.notEqual(String(start.headers['set-cookie']).split(';')[0], planted);
    assert.equal((await callback(alpha.authorize(start.headers.location!, identity), planted)).status, 400, 'the planted value does not pass');
    const plain = await app.call('GET', `/auth/oidc/alpha?${new URLSearchParams({ redirect_uri: appReturn, state: 's', code_challenge: pkce().challenge, code_challenge_method: 'plain' })}`);
    assert.equal(plain.status, 400);
    assert.equal((await app.call('GET', '/auth/oidc/nobody?redirect_uri=x')).status, 404);
    const { back } = await signInThrough('alpha', alpha, identity);
    const wrong = await exchange(back.get('code')!, pkce().verifier);
    assert.equal(wrong.json.error, 'invalid_grant');
    const { verifier } = pkce();
    assert.equal((await exchange(back.get('code')!, verifier)).json.error, 'invalid_grant', 'a refused code is used up');
  });

  it('never signs in or links by address: an unknown identity with an owner\'s address is refused, and the owner told', async () => {
    const { user: owner } = await registerAndSignIn(app, uniqueUser('oidc-addr'));
    const before = app.smtp.messages.length;
    const stranger = await signInThrough('alpha', alpha, { sub: newUser().sub, email: owner.email, emailVerified: true });
    const nobody = await signInThrough('alpha', alpha, { sub: newUser().sub, email: 'nobody-here@example.com', emailVerified: false });
    const answers = [];
    for (const { back, verifier } of [stranger, nobody]) {
      assert.equal(back.get('error'), null);
      const answer = await exchange(back.get('code')!, verifier);
      assert.equal(answer.status, 400);
      assert.equal(answer.json.error, 'unknown_identity');
      answers.push(answer.text);
    }
    assert.equal(answers[0], answers[1], 'the same answer, whether the address has an account');
    // An address the provider did not verify, or one with a NUL in it, mails nobody and breaks nothing.
    const unverified = await signInThrough('alpha', alpha, { sub: newUser().sub, email: owner.email, emailVerified: false });
    assert.equal((await exchange(unverified.back.get('code')!, unverified.verifier)).json.error, 'unknown_identity');
    const nul = await signInThrough('alpha', alpha, { sub: newUser().sub }, { email: `${owner.email}\u0000` });
    assert.equal((await exchange(nul.back.get('code')!, nul.verifier)).json.error, 'unknown_identity');
    await untilQueuesDrained(app.service.sql);
    const told = app.smtp.messages.filter((m) => m.to === owner.email && m.subject === 'A sign-in through alpha with your address');
    assert.equal(told.length, 1, 'the verified address only');
    const notice = await app.smtp.waitFor((m) => m.to === owner.email && m.subject === 'A sign-in through alpha with your address' && app.smtp.messages.indexOf(m) >= before);
    assert.match(notice.text, /link alpha in your account's settings/);
  });

  it('announces a sign-in through a provider from a new client to the owner', async () => {
    const { user: owner, token } = await registerAndSignIn(app, uniqueUser('oidc'));
    const identity = newUser(owner.email);
    assert.equal((await link('alpha', alpha, token, owner, identity)).status, 201);
    const { back, verifier } = await signInThrough('alpha', alpha, identity);
    const fields = form({ grant_type: 'authorization_code', code: back.get('code')!, redirect_uri: appReturn, code_verifier: verifier });
    const tokens = await app.call('POST', '/auth/token', { ...fields, headers: { ...fields.headers, 'user-agent': 'provider-client/3' } });
    assert.equal(tokens.status, 200, tokens.text);
    const notice = await app.smtp.waitFor((m) => m.to === owner.email && m.subject === 'A new sign-in to your account');
    assert.match(notice.text, /through a sign-in provider, from the address 127\.0\.0\.1 with another program/);
  });

  it('links an identity to one account only, to the session that asked, and removes it with the password', async () => {
    const first = await registerAndSignIn(app, uniqueUser('oidc-one'));
    const second = await registerAndSignIn(app, uniqueUser('oidc-two'));
    const identity = newUser();
    assert.equal((await link('alpha', alpha, first.token, first.user, identity)).status, 201);
    app.clock.advance(61);
    const taken = await link('alpha', alpha, second.token, second.user, identity);
    assert.equal(taken.status, 400);
    assert.equal(taken.json.type, 'urn:account-service:problem:invalid-link');
    // A stranger's link code, completed by the first account's session, links nothing.
    app.clock.advance(61);
    const stranger = await startLink('beta', beta, second.token, second.user, newUser());
    const csrf = await app.call('POST', '/acc/me/identities', {
      token: first.token, json: { code: stranger.back.get('code'), code_verifier: stranger.verifier, redirect_uri: appReturn, email_code: stranger.emailCode },
    });
    assert.equal(csrf.status, 400);
    assert.equal(csrf.json.type, 'urn:account-service:problem:invalid-link');
    // A wrong mailed code: refused, and the callback's code is used up (one guess a trip).
    app.clock.advance(61);
    const guess = await startLink('beta', beta, second.token, second.user, newUser());
    const body = { code: guess.back.get('code'), code_verifier: guess.verifier, redirect_uri: appReturn };
    const wrongCode = await app.call('POST', '/acc/me/identities', { token: second.token, json: { ...body, email_code: 'ABCD-ABCD-ABCD-ABCD' } });
    assert.equal(wrongCode.status, 403);
    assert.equal(wrongCode.json.type, 'urn:account-service:problem:wrong-email-code');
    assert.equal((await app.call('POST', '/acc/me/identities', { token: second.token, json: { ...body, email_code: guess.emailCode } })).status, 400);
    const listed = await app.call('GET', '/acc/me/identities', { token: first.token });
    const id = listed.json.identities[0].id as string;
    assert.equal((await app.call('DELETE', `/acc/me/identities/${id}`, { token: first.token, json: { pwd: 'wrong-password' } })).status, 403);
    assert.equal((await app.call('DELETE', `/acc/me/identities/${id}`, { token: first.token, json: { pwd: first.user.pwd } })).status, 204);
    assert.equal((await app.call('DELETE', `/acc/me/identities/${id}`, { token: first.token, json: { pwd: first.user.pwd } })).status, 404);
    const refused = await signInThrough('alpha', alpha, identity);
    assert.equal((await exchange(refused.back.get('code')!, refused.verifier)).json.error, 'unknown_identity', 'a removed identity signs in no more');
  });

  it('makes an account of a trusted provider\'s verified identity, named by the user, and of no other', async () => {
    const register = (code: string, verifier: string, name: string) =>
      app.call('POST', '/acc/reg/oidc', { json: { code, code_verifier: verifier, redirect_uri: appReturn, name } });
    const person = uniqueUser('fresh');
    const identity = { sub: newUser().sub, email: person.email, emailVerified: true };
    const first = await signInThrough('beta', beta, identity);
    assert.equal((await exchange(first.back.get('code')!, first.verifier)).json.error, 'unknown_identity');
    const { user: other } = await registerAndSignIn(app, uniqueUser('taken'));
    assert.equal((await register(first.back.get('code')!, first.verifier, other.name)).status, 409, 'a name that is taken');
    assert.equal((await register(first.back.get('code')!, pkce().verifier, person.name)).status, 400, 'another verifier');
    const second = await signInThrough('beta', beta, identity);
    const made = await register(second.back.get('code')!, second.verifier, person.name);
    assert.equal(made.status, 204, made.text);
    await app.smtp.waitFor((m) => m.to === person.email && m.subject === 'Your account is active');
    const again = await signInThrough('beta', beta, identity);
    const tokens = await exchange(again.back.get('code')!, again.verifier);
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal((await app.call('GET', '/acc/me', { token: tokens.json.access_token })).json.name, person.name);
    // Its password is nobody's until a reset sets one.
    assert.equal((await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: person.name, password: person.pwd } })).status, 400);

    // An address that is taken: answered alike, its owner told, no account made (past the address's code cooldown).
    app.clock.advance(61);
    const before = app.smtp.messages.length;
    const squatter = await signInThrough('beta', beta, { sub: newUser().sub, email: other.email, emailVerified: true });
    assert.equal((await register(squatter.back.get('code')!, squatter.verifier, `x${other.name}`.slice(0, 32))).status, 204);
    await app.smtp.waitFor((m) => m.to === other.email && app.smtp.messages.indexOf(m) >= before && /tried to register/.test(m.subject));
    // An untrusted provider, or an address the provider did not verify: register with a password instead.
    const untrusted = await signInThrough('alpha', alpha, { sub: newUser().sub, email: uniqueUser('u').email, emailVerified: true });
    const refused = await register(untrusted.back.get('code')!, untrusted.verifier, uniqueUser('u').name);
    assert.equal(refused.status, 400);
    assert.equal(refused.json['invalid-params'][0].name, 'code');
    const unverified = await signInThrough('beta', beta, { sub: newUser().sub, email: uniqueUser('v').email, emailVerified: false });
    assert.equal((await register(unverified.back.get('code')!, unverified.verifier, uniqueUser('v').name)).status, 400);
  });

  it('lets the owner\'s reset take every identity with the passkeys, on request', async () => {
    const { user: owner, token } = await registerAndSignIn(app, uniqueUser('oidc-reset'));
    const identity = newUser();
    assert.equal((await link('alpha', alpha, token, owner, identity)).status, 201);
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: owner.email } })).status, 204);
    const mail = await app.smtp.waitFor((m) => m.to === owner.email && m.subject === 'Your password reset code' && app.smtp.messages.indexOf(m) >= before);
    const reset = await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'a-new-password-1', passkeys: 'remove' } });
    assert.equal(reset.status, 204, reset.text);
    const { back, verifier } = await signInThrough('alpha', alpha, identity);
    assert.equal((await exchange(back.get('code')!, verifier)).json.error, 'unknown_identity', 'the identity went with the reset');
    const notice = await app.smtp.waitFor((m) => m.to === owner.email && m.subject === 'Your password was reset');
    assert.match(notice.text, /identities/);
  });

  it('makes the account of a trusted identity over a registration nobody activated, and never one without its identity', async () => {
    const register = (code: string, verifier: string, name: string) =>
      app.call('POST', '/acc/reg/oidc', { json: { code, code_verifier: verifier, redirect_uri: appReturn, name } });
    // A stranger registered the address, without its mailbox: the owner's provider proves it, and the pending one yields.
    const owner = uniqueUser('squatted');
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser('squatter'), email: owner.email } })).status, 204);
    // The barrier: the worker has made the pending registration (a request is resolved after its answer).
    await untilQueuesDrained(app.service.sql);
    const identity = { sub: newUser().sub, email: owner.email, emailVerified: true };
    const trip = await signInThrough('beta', beta, identity);
    assert.equal((await register(trip.back.get('code')!, trip.verifier, owner.name)).status, 204);
    const again = await signInThrough('beta', beta, identity);
    assert.equal((await exchange(again.back.get('code')!, again.verifier)).status, 200, 'the account is made and signs in');
    // A link and an account racing for one identity: one wins, and no account is left without it.
    for (let round = 0; round < 3; round += 1) {
      app.clock.advance(61);
      const { user: holder, token } = await registerAndSignIn(app, uniqueUser('racer'));
      const raced = { sub: newUser().sub, email: uniqueUser('raced').email, emailVerified: true };
      const linking = await startLink('beta', beta, token, holder, raced);
      const signing = await signInThrough('beta', beta, raced);
      const [linked, made] = await Promise.all([
        app.call('POST', '/acc/me/identities', { token, json: { code: linking.back.get('code'), code_verifier: linking.verifier, redirect_uri: appReturn, email_code: linking.emailCode } }),
        register(signing.back.get('code')!, signing.verifier, uniqueUser('raced').name),
      ]);
      assert.ok([201, 400].includes(linked.status) && [204, 400].includes(made.status), `${linked.status} ${made.status}`);
      const [orphans] = await app.service.sql`
        SELECT count(*)::int AS n FROM accounts a WHERE lower(a.email) = lower(${raced.email})
          AND NOT EXISTS (SELECT 1 FROM identities i WHERE i.account_id = a.id)`;
      assert.equal(orphans!.n, 0, 'no account without its identity');
    }
  });

  it('publishes the grant in the metadata, and refuses a discovery document that names another issuer', async () => {
    const metadata = await app.call('GET', '/.well-known/oauth-authorization-server');
    assert.ok(metadata.json.grant_types_supported.includes('authorization_code'));
    const liar = await startFakeProvider({ discoveryIssuer: 'http://127.0.0.1:2' });
    const other = await startTestService({
      env: { TOKEN_ISSUER: issuerBase, OIDC_PROVIDERS: 'liar', OIDC_REDIRECT_URIS: appReturn, OIDC_LIAR_ISSUER: liar.issuer, OIDC_LIAR_CLIENT_ID: liar.clientId, OIDC_LIAR_CLIENT_SECRET: liar.clientSecret },
    });
    try {
      const query = new URLSearchParams({ redirect_uri: appReturn, state: 's', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
      const refused = await other.call('GET', `/auth/oidc/liar?${query}`);
      assert.equal(refused.status, 502);
      assert.doesNotMatch(refused.text, /127\.0\.0\.1/, 'the caller learns no issuer');
      assert.ok(other.logs.some((line) => line.includes('discovery names the issuer')), 'the log says why');
    } finally {
      await other.stop();
      await liar.close();
    }
  });
});
