import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { passwordGrant, signedIn } from '../helpers/accounts.ts';
import { createAuthenticator, type TestAuthenticator } from '../helpers/authenticator.ts';
import { codeIn } from '../helpers/smtp.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

/**
 * "The owner always gets back in, round two": the outside tester's three owner cases, end to end
 * over HTTP, with the tester's numbers. No proxy is trusted: each client address is the socket's
 * own, one of 127.0.0.0/8 (`localAddress`), so each case runs from many source addresses.
 */
const rpId = 'localhost';
const origin = 'http://localhost:5173';
let app: TestService;
before(async () => {
  app = await startTestService({
    env: { WEBAUTHN_RP_ID: rpId, WEBAUTHN_ORIGINS: origin, WEBAUTHN_RP_NAME: 'Example', ACCOUNT_RATE_LIMIT: '30' },
  });
});
after(() => app.stop());

type User = { name: string; email: string; pwd: string };

const mailTo = (to: string, subject: string, since: number) =>
  app.smtp.waitFor((m) => m.to === to && m.subject === subject && app.smtp.messages.indexOf(m) >= since);

/** The owner's reset from `source`: asked, the code read from the mailbox, and completed. */
async function resetFrom(user: User, source: string, newPassword: string): Promise<void> {
  const before = app.smtp.messages.length;
  const asked = await app.call('POST', '/acc/pwd/code', { json: { email: user.email }, localAddress: source });
  assert.equal(asked.status, 204, asked.text);
  const mail = await mailTo(user.email, 'Your password reset code', before);
  const reset = await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: newPassword }, localAddress: source });
  assert.equal(reset.status, 204, reset.text);
  user.pwd = newPassword;
}

/** Adds a passkey with the password and the mailbox, as an intruder who once had both could. */
async function addPasskey(token: string, user: User, auth: TestAuthenticator, localAddress: string): Promise<void> {
  app.clock.advance(61);
  const before = app.smtp.messages.length;
  const options = await app.call('POST', '/acc/me/passkeys/options', { token, json: { pwd: user.pwd }, localAddress });
  assert.equal(options.status, 200, options.text);
  const mail = await mailTo(user.email, 'Your code to add a passkey', before);
  const credential = auth.register(options.json.options, origin, rpId);
  const json = { challenge_id: options.json.challenge_id, credential, email_code: codeIn(mail) };
  const added = await app.call('POST', '/acc/me/passkeys', { token, json, localAddress });
  assert.equal(added.status, 201, added.text);
}

async function passkeySignIn(auth: TestAuthenticator, localAddress: string): Promise<string> {
  const options = await app.call('POST', '/auth/passkey/options', { localAddress });
  const credential = auth.assert(options.json.options, origin, rpId);
  const json = { grant_type: 'urn:account-service:grant-type:passkey', challenge_id: options.json.challenge_id, credential };
  const answer = await app.call('POST', '/auth/token', { json, localAddress });
  assert.equal(answer.status, 200, answer.text);
  return answer.json.access_token as string;
}

describe('the owner always gets back in, round two (issue 44)', () => {
  it('1. a password thief cannot delete the account: it needs the mailbox, and the name stays the owner\'s', async () => {
    const { user } = await registerAndSignIn(app);
    const auth = createAuthenticator(-7);
    await addPasskey((await signedIn(app, user.name, user.pwd)).access_token, user, auth, '127.0.0.1');
    // The thief signs in from a new network and asks to delete, once a minute, from ten addresses.
    const thief = (await signedIn(app, user.name, user.pwd, { source: '127.44.1.1' })).access_token;
    for (let attempt = 0; attempt < 10; attempt += 1) {
      const localAddress = `127.44.1.${attempt + 1}`;
      const asked = await app.call('DELETE', '/acc/me', { token: thief, json: { pwd: user.pwd }, localAddress });
      assert.equal(asked.status, 202, asked.text);
      const guess = await app.call('DELETE', '/acc/me', {
        token: thief, json: { pwd: user.pwd, email_code: 'ABCD-EFGH-IJKL-MNOP' }, localAddress,
      });
      assert.equal(guess.status, 403, guess.text);
      app.clock.advance(61);
    }
    assert.equal((await app.call('GET', '/acc/me', { token: thief })).status, 200, 'the account is still there');
    const stolenName = await app.call('POST', '/acc/reg/code', {
      json: { ...uniqueUser('thief'), name: user.name }, localAddress: '127.44.1.20',
    });
    assert.equal(stolenName.status, 409, 'the name is not free');
    // The owner resets from the mailbox, and the passkey still signs in.
    await resetFrom(user, '127.44.2.1', 'owner-takes-it-back-44-1');
    assert.equal((await app.call('GET', '/acc/me', { token: thief })).status, 401, 'the reset ended the thief\'s session');
    await passkeySignIn(auth, '127.44.2.1');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { source: '127.44.2.1' })).status, 200);
  });

  it("2. an intruder's passkey session cannot starve the owner's sign-in after a reset", async () => {
    const { user, token } = await registerAndSignIn(app);
    const intruderKey = createAuthenticator(-7);
    await addPasskey(token, user, intruderKey, '127.45.0.1');
    await resetFrom(user, '127.45.9.9', 'owner-takes-it-back-44-2');
    // The intruder signs in with the passkey and loops on the session list until refused.
    const intruder = await passkeySignIn(intruderKey, '127.45.0.1');
    let listed = 200;
    let loops = 0;
    while (listed === 200 && loops < 100) {
      listed = (await app.call('GET', '/acc/me/sessions', { token: intruder, localAddress: '127.45.0.1' })).status;
      loops += 1;
    }
    assert.equal(listed, 429, 'the intruder spends its own session\'s allowance');
    // 27 password sign-ins of the owner in the same minute, from the network that completed the reset.
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 27; attempt += 1) {
      statuses.push((await passwordGrant(app, user.name, user.pwd, { source: '127.45.9.9' })).status);
    }
    assert.deepEqual(statuses, Array(27).fill(200), 'every sign-in of the owner goes through');
    const owner = (await signedIn(app, user.name, user.pwd, { source: '127.45.9.9' })).access_token;
    assert.equal((await app.call('GET', '/acc/me/sessions', { token: owner, localAddress: '127.45.9.9' })).status, 200);
    const passkeys = await app.call('GET', '/acc/me/passkeys', { token: owner, localAddress: '127.45.9.9' });
    assert.equal(passkeys.status, 200, passkeys.text);
    const [intruders] = passkeys.json.passkeys as { id: string }[];
    const removed = await app.call('DELETE', `/acc/me/passkeys/${intruders!.id}`, {
      token: owner, json: { pwd: user.pwd }, localAddress: '127.45.9.9',
    });
    assert.equal(removed.status, 204, removed.text);
    assert.equal((await app.call('GET', '/acc/me', { token: intruder })).status, 401, 'the passkey\'s session ended with it');
    // The intruder's own sign-ins from its network count on their own: they never reach the owner's.
    const intruderSignIns: number[] = [];
    for (let attempt = 0; attempt < 31; attempt += 1) {
      intruderSignIns.push((await passwordGrant(app, user.name, user.pwd, { source: '127.45.0.2' })).status);
    }
    assert.equal(intruderSignIns.at(-1), 429, 'one network\'s sign-ins are still bounded');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { source: '127.45.9.8' })).status, 200);
  });

  it('3. a stranger who spends the address\'s reset quota does not keep the owner from resetting', async () => {
    const { user } = await registerAndSignIn(app, { ...uniqueUser('owner'), pwd: 'owner-password-44-3' });
    // The owner has signed in by name from home before; the address's quota is spent by a stranger.
    assert.equal((await passwordGrant(app, user.name, user.pwd, { source: '127.46.0.1' })).status, 200);
    const home = '127.46.0.1';
    const ask = (localAddress: string) => app.call('POST', '/acc/pwd/code', { json: { email: user.email }, localAddress });
    // The owner's code of before the stranger's requests: a newer code does not void it.
    const before = app.smtp.messages.length;
    assert.equal((await ask(home)).status, 204);
    const ownersFirst = codeIn(await mailTo(user.email, 'Your password reset code', before));
    for (let request = 0; request < 9; request += 1) {
      app.clock.advance(61);
      assert.equal((await ask(`127.46.1.${request + 1}`)).status, 204);
    }
    app.clock.advance(61);
    const capped = await ask('127.46.1.20');
    assert.equal(capped.status, 429);
    assert.equal(capped.json.type, 'urn:account-service:problem:daily-limit');
    // The owner, from the network that signed in: honoured, a few times a day.
    const mailsBefore = app.smtp.messages.length;
    const honoured = await ask(home);
    assert.equal(honoured.status, 204, honoured.text);
    const ownersSecond = codeIn(await mailTo(user.email, 'Your password reset code', mailsBefore));
    assert.notEqual(ownersSecond, ownersFirst);
    for (let request = 0; request < 2; request += 1) {
      app.clock.advance(61);
      assert.equal((await ask(home)).status, 204);
    }
    app.clock.advance(61);
    assert.equal((await ask(home)).status, 429, 'the mail a known network causes stays bounded too');
    assert.equal((await ask('127.46.1.21')).status, 429, 'the stranger gained nothing');
    // Every live code works; the first one, a day's strangers later, still sets the password.
    const reset = await app.call('POST', '/acc/pwd', { json: { code: ownersFirst, new_pwd: 'owner-resets-44-3' }, localAddress: home });
    assert.equal(reset.status, 204, reset.text);
    const spent = await app.call('POST', '/acc/pwd', { json: { code: ownersSecond, new_pwd: 'owner-resets-44-3b' }, localAddress: home });
    assert.equal(spent.status, 404, 'using one code used them all');
    // The network that completed a reset is known for the next one, signed in or not.
    const other = await registerAndSignIn(app);
    await resetFrom(other.user, '127.46.5.5', 'reset-once-44-3');
    for (let request = 0; request < 10; request += 1) {
      app.clock.advance(61);
      await app.call('POST', '/acc/pwd/code', { json: { email: other.user.email }, localAddress: `127.46.6.${request + 2}` });
    }
    app.clock.advance(61);
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: other.user.email }, localAddress: '127.46.6.30' })).status, 429);
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: other.user.email }, localAddress: '127.46.5.5' })).status, 204);
  });

  it("4. a reset can take every passkey with it, so an intruder's passkey session cannot keep the owner out (second outside tester)", async () => {
    const { user, token } = await registerAndSignIn(app);
    const intruderKey = createAuthenticator(-7);
    await addPasskey(token, user, intruderKey, '127.47.0.1');
    // The intruder signs in with the passkey and signs out every session, as often as it likes.
    const signOutEverywhere = async () => {
      const intruder = await passkeySignIn(intruderKey, '127.47.0.2');
      return app.call('DELETE', '/acc/me/sessions', { token: intruder, localAddress: '127.47.0.2' });
    };
    assert.equal((await signOutEverywhere()).status, 204);
    // The owner's reset from the mailbox, asking that every passkey go with it.
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email }, localAddress: '127.47.9.9' })).status, 204);
    const code = codeIn(await mailTo(user.email, 'Your password reset code', before));
    const json = { code, new_pwd: 'owner-takes-it-back-44-4', passkeys: 'remove' };
    assert.equal((await app.call('POST', '/acc/pwd', { json, localAddress: '127.47.9.9' })).status, 204);
    const options = await app.call('POST', '/auth/passkey/options', { localAddress: '127.47.0.2' });
    const credential = intruderKey.assert(options.json.options, origin, rpId);
    const grant = { grant_type: 'urn:account-service:grant-type:passkey', challenge_id: options.json.challenge_id, credential };
    const refused = await app.call('POST', '/auth/token', { json: grant, localAddress: '127.47.0.2' });
    assert.equal(refused.status, 400, 'the passkey no longer signs in');
    assert.equal(refused.json.error, 'invalid_grant');
    const owner = (await signedIn(app, user.name, 'owner-takes-it-back-44-4', { source: '127.47.9.9' })).access_token;
    assert.deepEqual((await app.call('GET', '/acc/me/passkeys', { token: owner })).json.passkeys, []);
    const events = (await app.call('GET', '/acc/me/events', { token: owner })).json.events as { type: string }[];
    assert.ok(events.some((event) => event.type === 'passkey-removed'), 'the removal is in the activity');
    const wrong = await app.call('POST', '/acc/pwd', { json: { code: 'ABCD-EFGH-IJKL-MNOP', new_pwd: 'whatever-1', passkeys: 'all' } });
    assert.equal(wrong.status, 400, 'passkeys is keep or remove');
  });

  it("5. a session that spends the account's own password budget does not keep the owner out after a reset", async () => {
    const { user, token } = await registerAndSignIn(app);
    const wrongFrom = (index: number) =>
      app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: 'not-the-password', new_pwd: 'another-harbor-123' }, localAddress: `127.48.${index}.9` });
    // 100 wrong passwords an hour per account (LOGIN_FAILURES_PER_HOUR), five from each network before it waits.
    let last = 0;
    for (let index = 0; index < 24 && last !== 429; index += 1) {
      for (let attempt = 0; attempt < 5; attempt += 1) last = (await wrongFrom(index)).status;
    }
    assert.equal(last, 429, 'the budget is spent');
    await resetFrom(user, '127.48.99.9', 'owner-takes-it-back-44-5');
    const owner = (await signedIn(app, user.name, user.pwd, { source: '127.48.99.9' })).access_token;
    // The budget is spent again by the intruder's next session (here, a session of the owner's, as the thief's ended).
    const intruder = (await signedIn(app, user.name, user.pwd, { source: '127.48.50.1' })).access_token;
    last = 0;
    for (let index = 0; index < 24 && last !== 429; index += 1) {
      for (let attempt = 0; attempt < 5; attempt += 1) {
        last = (await app.call('DELETE', '/acc/me', { token: intruder, json: { pwd: 'not-the-password' }, localAddress: `127.48.${index}.10` })).status;
      }
    }
    assert.equal(last, 429, 'spent again');
    const change = await app.call('PUT', '/acc/me/pwd', {
      token: owner, json: { old_pwd: user.pwd, new_pwd: 'owner-changes-it-44-5' }, localAddress: '127.48.99.9',
    });
    assert.equal(change.status, 204, `the network that completed the reset still has the password checked: ${change.text}`);
  });

  it('6. renames count per account, a name given again is no event, and renames never push the owner\'s events out of view', async () => {
    const { user, token } = await registerAndSignIn(app);
    await addPasskey(token, user, createAuthenticator(-7), '127.49.0.1');
    const [passkey] = (await app.call('GET', '/acc/me/passkeys', { token })).json.passkeys as { id: string; name: string }[];
    // A thief's six sessions, renaming at once (the second outside tester's 180 renames in 0.7 s).
    const thieves = await Promise.all(Array.from({ length: 6 }, async (_, index) =>
      (await signedIn(app, user.name, user.pwd, { source: `127.49.1.${index + 1}` })).access_token));
    const rename = (session: string, name: string) => app.call('PATCH', `/acc/me/passkeys/${passkey!.id}`, { token: session, json: { name } });
    assert.equal((await rename(token, '   ')).status, 400, 'spaces alone');
    assert.equal((await rename(token, 'Same name')).status, 200);
    assert.equal((await rename(token, 'Same name')).status, 200, 'given again: no event (counted below)');
    const statuses = await Promise.all(thieves.flatMap((session, index) =>
      Array.from({ length: 10 }, (_, attempt) => rename(session, `Laptop ${index}-${attempt}`).then((answer) => answer.status))));
    // ACCOUNT_RATE_LIMIT (30) a minute for the account's renames, not per session; three were spent above.
    assert.equal(statuses.filter((status) => status === 200).length, 27, 'the account\'s allowance, from every session');
    assert.ok(statuses.every((status) => status === 200 || status === 429), String(statuses));
    const events = (await app.call('GET', '/acc/me/events', { token })).json.events as { type: string }[];
    assert.ok(events.filter((event) => event.type === 'passkey-renamed').length <= 10, 'renames fill at most ten of the view');
    assert.ok(events.some((event) => event.type === 'passkey-added'), "the owner's events stay in view");
    assert.equal(events.filter((event) => event.type === 'signed-in').length, 7, 'and so do the sign-ins');
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM security_events e JOIN accounts a ON a.id = e.account_id WHERE a.name = ${user.name} AND e.type = 'passkey-renamed'`;
    assert.equal(row!.n, 28, 'the name given again wrote nothing');
  });

  it("7. an intruder's reset leaves the owner's home network able to reset past a stranger's spent quota (second outside tester)", async () => {
    const { user } = await registerAndSignIn(app);
    const home = '127.43.0.1';
    assert.equal((await passwordGrant(app, user.name, user.pwd, { source: home })).status, 200, 'the owner signs in from home');
    // The intruder, while holding the mailbox, resets from its own network; then loses the mailbox.
    await resetFrom({ ...user }, '127.43.1.1', 'intruder-password-44-7');
    // As a stranger it spends the address's quota (the reset above was one of the ten).
    const ask = (localAddress: string) => app.call('POST', '/acc/pwd/code', { json: { email: user.email }, localAddress });
    let last = 204;
    for (let request = 0; request < 10 && last === 204; request += 1) {
      app.clock.advance(61);
      last = (await ask(`127.43.2.${request + 1}`)).status;
    }
    assert.equal(last, 429, 'spent');
    app.clock.advance(61);
    const before = app.smtp.messages.length;
    const owners = await ask(home);
    assert.equal(owners.status, 204, `the owner's home network is still known for resets: ${owners.text}`);
    await mailTo(user.email, 'Your password reset code', before);
  });
  it('8. the owner passes what a stolen token spends, and resets past a spent cap from where it signs in by passkey or changed its address (third outside tester)', async () => {
    const spendResets = async (email: string, prefix: string) => {
      let last = 204;
      for (let request = 0; request < 11 && last === 204; request += 1) {
        app.clock.advance(61);
        last = (await app.call('POST', '/acc/pwd/code', { json: { email }, localAddress: `${prefix}.${request + 1}` })).status;
      }
      assert.equal(last, 429, `a stranger spent the cap of ${email}`);
      app.clock.advance(61);
    };
    // A stolen access token spends the account's own password budget from 24 networks.
    const { user, token } = await registerAndSignIn(app);
    const home = '127.42.0.1';
    const owner = (await signedIn(app, user.name, user.pwd, { source: home })).access_token;
    let last = 0;
    for (let index = 0; index < 24 && last !== 429; index += 1) {
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const json = { old_pwd: 'not-the-password', new_pwd: 'another-harbor-123' };
        last = (await app.call('PUT', '/acc/me/pwd', { token, json, localAddress: `127.42.${index + 10}.9` })).status;
      }
    }
    assert.equal(last, 429, 'the budget is spent');
    const change = await app.call('PUT', '/acc/me/pwd', { token: owner, json: { old_pwd: user.pwd, new_pwd: 'owner-password-44-8' }, localAddress: home });
    assert.equal(change.status, 204, `the network the owner signs in from passes: ${change.text}`);
    user.pwd = 'owner-password-44-8';
    // A refresh token presented again within its window writes an event each time: at most ten in view.
    const first = (await signedIn(app, user.name, user.pwd, { source: home })).refresh_token as string;
    const refresh = (refreshToken: string, localAddress: string) =>
      app.call('POST', '/auth/token', { json: { grant_type: 'refresh_token', refresh_token: refreshToken }, localAddress });
    let spent = first;
    for (let round = 0; round < 12; round += 1) {
      const next = (await refresh(spent, `127.42.1.${round + 1}`)).json.refresh_token as string;
      await refresh(spent, `127.42.2.${round + 1}`);
      spent = next;
    }
    const view = await app.call('GET', '/acc/me/events', { token: (await signedIn(app, user.name, user.pwd, { source: home })).access_token });
    const types = (view.json.events as { type: string }[]).map((event) => event.type);
    assert.ok(types.filter((type) => type === 'refresh-retried').length <= 10, String(types));
    assert.ok(types.includes('password-changed') && types.includes('activated'), "the owner's events stay in view");

    // A network the owner signs in from by passkey only may reset past a spent cap.
    const auth = createAuthenticator(-7);
    const fresh = (await signedIn(app, user.name, user.pwd, { source: '127.42.3.1' })).access_token;
    await addPasskey(fresh, user, auth, '127.42.3.1');
    await passkeySignIn(auth, '127.42.4.1');
    await spendResets(user.email, '127.42.5');
    const byPasskey = await app.call('POST', '/acc/pwd/code', { json: { email: user.email }, localAddress: '127.42.4.1' });
    assert.equal(byPasskey.status, 204, `the passkey's network: ${byPasskey.text}`);

    // The network that confirmed a change of address may reset the new address past a spent cap.
    const moved = await registerAndSignIn(app);
    const newEmail = `${uniqueUser('moved').name}@example.com`;
    const at = '127.42.6.1';
    const before = app.smtp.messages.length;
    const asked = await app.call('POST', '/acc/me/email', { token: moved.token, json: { pwd: moved.user.pwd, email: newEmail }, localAddress: at });
    assert.equal(asked.status, 204, asked.text);
    const newCode = codeIn(await mailTo(newEmail, 'Confirm your new e-mail address', before));
    const currentCode = codeIn(await mailTo(moved.user.email, 'A change of your e-mail address was asked for', before));
    const confirmed = await app.call('POST', '/acc/email', { json: { code: newCode, current_code: currentCode }, localAddress: at });
    assert.equal(confirmed.status, 204, confirmed.text);
    await spendResets(newEmail, '127.42.7');
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: newEmail }, localAddress: at })).status, 204);
  });
});
