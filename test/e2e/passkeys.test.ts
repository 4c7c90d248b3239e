import assert from 'node:assert/strict';
import { passkeyRenameSchema } from '../../src/features/passkeys/fields.ts';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { deleteAccount, eventsOf } from '../helpers/accounts.ts';
import { createAuthenticator, type TestAuthenticator } from '../helpers/authenticator.ts';
import { form } from '../helpers/http.ts';
import { registerAndSignIn, signIn, startTestService, type TestService } from '../helpers/service.ts';
import { codeIn } from '../helpers/smtp.ts';
import { waitUntil } from '../helpers/wait.ts';
import { acceptedEvents, startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';

const origin = 'https://app.example.test';
const rpId = 'example.test';
const grant = 'urn:account-service:grant-type:passkey';

describe('passkeys over HTTP', () => {
  let app: TestService;
  let receiver: Receiver;
  before(async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    receiver = await startReceiver(secret);
    const webhooks = { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret };
    app = await startTestService({
      env: { WEBAUTHN_RP_ID: rpId, WEBAUTHN_ORIGINS: origin, WEBAUTHN_RP_NAME: 'Example', ...webhooks },
      webhooks: { pollMs: 100, backoffBaseMs: 50, backoffCapMs: 100 },
    });
  });
  after(async () => {
    await app.stop();
    await receiver.stop();
  });

  /** Options, the mailed code, and the addition; advances the clock past the request quota's cooldown. */
  async function addPasskey(token: string, pwd: string, email: string, auth: TestAuthenticator, name?: string) {
    app.clock.advance(61);
    const options = await app.call('POST', '/acc/me/passkeys/options', { token, json: { pwd } });
    assert.equal(options.status, 200, options.text);
    const mail = await app.smtp.waitFor((m) => m.to === email && m.subject === 'Your code to add a passkey' && !used.has(m.messageId));
    used.add(mail.messageId);
    const credential = auth.register(options.json.options, origin, rpId);
    return app.call('POST', '/acc/me/passkeys', { token, json: { challenge_id: options.json.challenge_id, credential, email_code: codeIn(mail), ...(name ? { name } : {}) } });
  }
  const used = new Set<string>();

  async function passkeySignIn(auth: TestAuthenticator, bend = {}, encoding: 'json' | 'form' = 'json') {
    const options = await app.call('POST', '/auth/passkey/options');
    assert.equal(options.status, 200);
    const credential = auth.assert(options.json.options, origin, rpId, bend);
    const fields = { grant_type: grant, challenge_id: options.json.challenge_id };
    const answer = encoding === 'json'
      ? await app.call('POST', '/auth/token', { json: { ...fields, credential } })
      : await app.call('POST', '/auth/token', form({ ...fields, credential: JSON.stringify(credential) }));
    return { answer, options: options.json, credential };
  }

  it('announces a passkey sign-in from a new client to the owner', async () => {
    const { user, token } = await registerAndSignIn(app);
    const auth = createAuthenticator(-7);
    assert.equal((await addPasskey(token, user.pwd, user.email, auth)).status, 201);
    const options = await app.call('POST', '/auth/passkey/options');
    const credential = auth.assert(options.json.options, origin, rpId, {});
    const json = { grant_type: grant, challenge_id: options.json.challenge_id, credential };
    const answer = await app.call('POST', '/auth/token', { json, headers: { 'user-agent': 'passkey-client/2.0' } });
    assert.equal(answer.status, 200, answer.text);
    const notice = await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'A new sign-in to your account');
    assert.match(notice.text, /with a passkey, from the address 127\.0\.0\.1 with another program/);
  });

  it('adds a passkey with the mailed code, lists, renames, signs in usernameless twice, and removes it', async () => {
    const { user, token } = await registerAndSignIn(app);
    const auth = createAuthenticator(-7);
    const added = await addPasskey(token, user.pwd, user.email, auth, 'Laptop');
    assert.equal(added.status, 201, added.text);
    assert.equal(added.json.name, 'Laptop');
    assert.equal(added.json.backed_up, true);
    await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'A passkey was added');
    for (const encoding of ['json', 'form'] as const) {
      const { answer } = await passkeySignIn(auth, {}, encoding);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.token_type, 'Bearer');
    }
    const renamed = await app.call('PATCH', `/acc/me/passkeys/${added.json.id}`, { token, json: { name: 'Phone' } });
    assert.equal(renamed.json.name, 'Phone');
    const list = await app.call('GET', '/acc/me/passkeys', { token });
    assert.equal(list.json.passkeys.length, 1);
    assert.notEqual(list.json.passkeys[0].last_used_at, null);
    const types = (await eventsOf(app, token)).map((event) => event.type);
    assert.ok(types.includes('passkey-added') && types.filter((type) => type === 'signed-in').length >= 3, types.join());
    const other = await registerAndSignIn(app);
    assert.equal((await app.call('DELETE', `/acc/me/passkeys/${added.json.id}`, { token: other.token, json: { pwd: other.user.pwd } })).status, 404, "another account's id");
    assert.equal((await app.call('DELETE', `/acc/me/passkeys/${added.json.id}`, { token, json: { pwd: user.pwd } })).status, 204);
    await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'A passkey was removed');
    assert.equal((await passkeySignIn(auth)).answer.json.error, 'invalid_grant');
  });

  it('records a rename: a passkey-renamed event of the session, and a passkey.renamed webhook', async () => {
    const { user, token } = await registerAndSignIn(app);
    const added = await addPasskey(token, user.pwd, user.email, createAuthenticator(-7), 'Laptop');
    assert.equal(added.status, 201, added.text);
    const renamed = await app.call('PATCH', `/acc/me/passkeys/${added.json.id}`, { token, json: { name: 'Phone' } });
    assert.equal(renamed.status, 200, renamed.text);
    const [latest] = await eventsOf(app, token);
    const { sid } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string };
    assert.deepEqual([latest?.type, latest?.session_id], ['passkey-renamed', sid]);
    const other = await registerAndSignIn(app);
    const foreign = await app.call('PATCH', `/acc/me/passkeys/${added.json.id}`, { token: other.token, json: { name: 'Mine' } });
    assert.equal(foreign.status, 404, "another account's id");
    const otherTypes = (await eventsOf(app, other.token)).map((event) => event.type);
    assert.ok(!otherTypes.includes('passkey-renamed'), `no event for a rename that renamed nothing: ${otherTypes.join()}`);
    const isRename = (event: { type: string; data: Record<string, unknown> }) =>
      event.type === 'passkey.renamed' && event.data.passkey_id === added.json.id;
    await receiver.waitFor((received) => acceptedEvents(received).some(isRename));
  });

  it('refuses the addition without the mailed code, and a replayed challenge', async () => {
    const { user, token } = await registerAndSignIn(app);
    app.clock.advance(61);
    const options = await app.call('POST', '/acc/me/passkeys/options', { token, json: { pwd: user.pwd } });
    const credential = createAuthenticator(-8).register(options.json.options, origin, rpId);
    const body = { challenge_id: options.json.challenge_id, credential, email_code: 'AAAA-AAAA-AAAA-AAAA' };
    const wrong = await app.call('POST', '/acc/me/passkeys', { token, json: body });
    assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-email-code');
    const again = await app.call('POST', '/acc/me/passkeys', { token, json: body });
    assert.equal(again.json.type, 'urn:account-service:problem:unknown-challenge', 'the challenge was used up');
    assert.equal((await app.call('GET', '/acc/me/passkeys', { token })).json.passkeys.length, 0);
  });

  it('leaves the mailed code usable after a request whose challenge is not live', async () => {
    const { user, token } = await registerAndSignIn(app);
    app.clock.advance(61);
    const options = await app.call('POST', '/acc/me/passkeys/options', { token, json: { pwd: user.pwd } });
    const mail = await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'Your code to add a passkey' && !used.has(m.messageId));
    used.add(mail.messageId);
    const credential = createAuthenticator(-7).register(options.json.options, origin, rpId);
    const json = { challenge_id: 'AAAA', credential, email_code: codeIn(mail) };
    const madeUp = await app.call('POST', '/acc/me/passkeys', { token, json });
    assert.equal(madeUp.json.type, 'urn:account-service:problem:unknown-challenge');
    const added = await app.call('POST', '/acc/me/passkeys', { token, json: { ...json, challenge_id: options.json.challenge_id } });
    assert.equal(added.status, 201, added.text);
  });

  it("binds a registration challenge to the caller's session, and to registration", async () => {
    const { user, token } = await registerAndSignIn(app);
    const otherSession = await signIn(app, user.name, user.pwd);
    const auth = createAuthenticator(-7);
    const present = async (challengeId: string, bearer: string) => {
      app.clock.advance(61);
      const options = await app.call('POST', '/acc/me/passkeys/options', { token, json: { pwd: user.pwd } });
      const mail = await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'Your code to add a passkey' && !used.has(m.messageId));
      used.add(mail.messageId);
      const credential = auth.register(options.json.options, origin, rpId);
      const json = { challenge_id: challengeId || options.json.challenge_id, credential, email_code: codeIn(mail) };
      return app.call('POST', '/acc/me/passkeys', { token: bearer, json });
    };
    const fromOtherSession = await present('', otherSession);
    assert.equal(fromOtherSession.json.type, 'urn:account-service:problem:unknown-challenge', 'another session of the account');
    const signInChallenge = (await app.call('POST', '/auth/passkey/options')).json.challenge_id as string;
    const fromSignIn = await present(signInChallenge, token);
    assert.equal(fromSignIn.json.type, 'urn:account-service:problem:unknown-challenge', 'a sign-in challenge');
    assert.equal((await present('', token)).status, 201, 'the session that asked');
  });

  it('starts no session for a sign-in that waited on the account row behind the passkey\'s removal', async () => {
    const { user, token } = await registerAndSignIn(app);
    const auth = createAuthenticator(-7);
    assert.equal((await addPasskey(token, user.pwd, user.email, auth)).status, 201);
    const sql = app.service.sql;
    const [account] = await sql`SELECT id FROM accounts WHERE name = ${user.name}`;
    const sessions = async () => (await sql`SELECT count(*)::int AS n FROM sessions WHERE account_id = ${account!.id}`)[0]!.n;
    let signingIn: ReturnType<typeof passkeySignIn> | null = null;
    // The removal's transaction, written out: it holds the account row when the sign-in
    // arrives (the barrier: the sign-in waits for that lock), then ends the sessions and
    // deletes the passkey. A counter's compare-and-set made before the lock let the sign-in
    // start its session after the removal (found by an outside tester).
    await sql.begin(async (tx) => {
      await tx`SELECT 1 FROM accounts WHERE id = ${account!.id} FOR NO KEY UPDATE`;
      signingIn = passkeySignIn(auth);
      await waitUntil(async () => {
        const [row] = await sql`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
        return row!.n === 1;
      });
      await tx`DELETE FROM sessions WHERE account_id = ${account!.id}`;
      await tx`DELETE FROM passkeys WHERE account_id = ${account!.id}`;
    });
    const { answer } = await signingIn!;
    assert.equal(answer.json.error, 'invalid_grant', answer.text);
    assert.equal(await sessions(), 0);
  });

  it('answers unknown, foreign and badly signed credentials alike, refuses replays, and records a counter regression', async () => {
    const { user, token } = await registerAndSignIn(app);
    const auth = createAuthenticator(-257);
    assert.equal((await addPasskey(token, user.pwd, user.email, auth)).status, 201);
    const unknown = (await passkeySignIn(createAuthenticator(-7))).answer;
    const foreign = (await passkeySignIn(auth, { userHandle: Buffer.alloc(16, 3).toString('base64url') })).answer;
    const impostor = createAuthenticator(-257);
    impostor.credentialId = auth.credentialId;
    impostor.userHandle = auth.userHandle;
    const badSignature = (await passkeySignIn(impostor)).answer;
    for (const answer of [unknown, foreign, badSignature]) {
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.json, unknown.json);
    }
    const { options, credential } = await passkeySignIn(auth);
    const replay = await app.call('POST', '/auth/token', { json: { grant_type: grant, challenge_id: options.challenge_id, credential } });
    assert.equal(replay.json.error, 'invalid_grant', 'a challenge works once');
    const regressed = (await passkeySignIn(auth, { signCount: 1 })).answer;
    assert.equal(regressed.json.error, 'invalid_grant');
    assert.ok((await eventsOf(app, token)).some((event) => event.type === 'passkey-counter-regressed'));
  });

  it('refuses a credential id another account holds with 409, and removing a passkey ends the sessions it began', async () => {
    const owner = await registerAndSignIn(app);
    const auth = createAuthenticator(-7);
    assert.equal((await addPasskey(owner.token, owner.user.pwd, owner.user.email, auth)).status, 201);
    // The same credential id again, from another account: 409, not a 500 (an outside tester's finding).
    const other = await registerAndSignIn(app);
    const copy = createAuthenticator(-7);
    copy.credentialId = auth.credentialId;
    const taken = await addPasskey(other.token, other.user.pwd, other.user.email, copy);
    assert.equal(taken.status, 409, taken.text);
    assert.equal(taken.json.type, 'urn:account-service:problem:passkey-registered');
    // A session begun with the passkey (a thief's, say) ends when the owner removes it.
    const stolen = (await passkeySignIn(auth)).answer.json;
    assert.equal((await app.call('GET', '/acc/me', { token: stolen.access_token })).status, 200);
    const [{ id }] = (await app.call('GET', '/acc/me/passkeys', { token: owner.token })).json.passkeys;
    const removed = await app.call('DELETE', `/acc/me/passkeys/${id}`, { token: owner.token, json: { pwd: owner.user.pwd } });
    assert.equal(removed.status, 204);
    assert.equal((await app.call('GET', '/acc/me', { token: stolen.access_token })).status, 401);
    const refresh = await app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: stolen.refresh_token }));
    assert.equal(refresh.json.error, 'invalid_grant');
    assert.equal((await app.call('GET', '/acc/me', { token: owner.token })).status, 200, "the owner's own session stays");
  });

  it('refuses passkey names with control or format characters, such as a right-to-left override', async () => {
    const { token } = await registerAndSignIn(app);
    // A right-to-left override, a C1 control (NEL), a line separator, a paragraph separator, a tab.
    for (const name of ['Laptop \u202egpj.exe', 'a\u0085b', 'a\u2028b', 'a\u2029b', 'a\tb']) {
      const rename = await app.call('PATCH', `/acc/me/passkeys/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`, {
        token, json: { name },
      });
      assert.equal(rename.status, 400, `${JSON.stringify(name)}: ${rename.text}`);
    }
    assert.equal((await app.call('PATCH', '/acc/me/passkeys/00000000-0000-4000-8000-000000000000', {
      token, json: { name: 'Téléphone · 2' },
    })).status, 404, 'printable text passes validation (and the id is unknown)');
  });

  it('refuses a passkey name that holds "=?", which a mail header would decode as an encoded word', async () => {
    const { user, token } = await registerAndSignIn(app);
    const reason = 'must be 1 to 64 characters, not all spaces, without control or format characters, line or paragraph separators, or "=?"';
    // The subject of an operator's template that shows this name would read as a right-to-left override.
    const encodedWord = '=?utf-8?B?4oCuZXZpbA==?=';
    const rename = await app.call('PATCH', '/acc/me/passkeys/00000000-0000-4000-8000-000000000000', {
      token, json: { name: `Laptop ${encodedWord}` },
    });
    assert.equal(rename.status, 400, rename.text);
    const pattern = passkeyRenameSchema.name.pattern.source;
    assert.deepEqual(rename.json['invalid-params'], [{ name: 'name', reason, pattern }]);
    const added = await addPasskey(token, user.pwd, user.email, createAuthenticator(-7), encodedWord);
    assert.equal(added.status, 400, added.text);
    assert.deepEqual(added.json['invalid-params'], [{ name: 'name', reason, pattern }]);
    assert.equal((await app.call('PATCH', '/acc/me/passkeys/00000000-0000-4000-8000-000000000000', {
      token, json: { name: 'a = b? yes =' },
    })).status, 404, 'an equals sign and a question mark apart pass validation (and the id is unknown)');
  });

  it('deleting the account removes its passkeys', async () => {
    const { user, token } = await registerAndSignIn(app);
    const auth = createAuthenticator(-7);
    assert.equal((await addPasskey(token, user.pwd, user.email, auth)).status, 201);
    assert.equal((await deleteAccount(app, token, user)).status, 204);
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM passkeys WHERE credential_id = ${auth.credentialId}`;
    assert.equal(row!.n, 0);
  });
});

describe('passkeys without WEBAUTHN_RP_ID', () => {
  it('answer 404 naming the settings', async () => {
    const app = await startTestService();
    try {
      const answer = await app.call('POST', '/auth/passkey/options');
      assert.equal(answer.status, 404);
      assert.match(answer.json.detail, /WEBAUTHN_RP_ID and WEBAUTHN_ORIGINS/);
    } finally {
      await app.stop();
    }
  });
});
