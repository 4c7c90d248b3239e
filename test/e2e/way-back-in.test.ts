import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enableTotp, passwordGrant, signedIn, totpStepOf } from '../helpers/accounts.ts';
import { codeIn } from '../helpers/smtp.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { keyedHashesOf, registerAndSignIn, startTestService, uniqueUser } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';
import { waitUntil } from '../helpers/wait.ts';

/**
 * Issue 30, "The owner always gets back in": each reproduction of the outside tester and the code
 * review, with its numbers, against the fix. No proxy is trusted: each client address is the
 * socket's own, one of 127.0.0.0/8 (`source`, `localAddress`).
 */
let app: TestService;
before(async () => {
  // No lock timeout: the lost race below holds a request at the account row until the test lets go.
  app = await startTestService({ env: { DATABASE_LOCK_TIMEOUT: '0' } });
});
after(() => app.stop());

type User = { name: string; email: string; pwd: string };
const wrongCode = (right: string) => (right === '000000' ? '000001' : '000000');
const currentCode = (secret: string) => referenceTotp(secret, totpStepOf(app) * 30);

/** The owner's password reset, asked and completed from `source`: the mailbox proves the owner. */
async function resetFrom(user: User, source: string, newPassword: string): Promise<void> {
  const before = app.smtp.messages.length;
  const asked = await app.call('POST', '/acc/pwd/code', { json: { email: user.email }, localAddress: source });
  assert.equal(asked.status, 204);
  const mail = await mailTo(user.email, 'Your password reset code', before);
  const json = { code: codeIn(mail), new_pwd: newPassword };
  const reset = await app.call('POST', '/acc/pwd', { json, localAddress: source });
  assert.equal(reset.status, 204, reset.text);
  user.pwd = newPassword;
}

/** The first message to `to` with this subject among those received since `since` messages. */
const mailTo = (to: string, subject: string, since: number) =>
  app.smtp.waitFor((m) => m.to === to && m.subject === subject && app.smtp.messages.indexOf(m) >= since);

/** Sends `requests` in parallel batches of ten; their statuses, in order. */
async function inBatches(requests: (() => Promise<{ status: number }>)[]): Promise<number[]> {
  const statuses: number[] = [];
  for (let at = 0; at < requests.length; at += 10) {
    const answers = await Promise.all(requests.slice(at, at + 10).map((send) => send()));
    statuses.push(...answers.map((answer) => answer.status));
  }
  return statuses;
}

describe('the owner always gets back in (issue 30)', () => {
  it("7. a thief's ten enrollment requests a day do not keep the owner who reset from enrolling (an outside tester's)", async () => {
    const { user } = await registerAndSignIn(app);
    const thief = (await signedIn(app, user.name, user.pwd, { source: '127.7.0.1' })).access_token;
    const ask = (token: string) => app.call('POST', '/acc/me/totp', { token, json: { pwd: user.pwd } });
    for (let request = 0; request < 10; request += 1) {
      assert.equal((await ask(thief)).status, 200);
      app.clock.advance(61);
    }
    assert.equal((await ask(thief)).status, 429, 'ten a day');
    await resetFrom(user, '127.7.0.2', 'owner-takes-it-back-7');
    const owner = (await signedIn(app, user.name, user.pwd, { source: '127.7.0.2' })).access_token;
    // The quotas are cleared after the reset's commit, before its answer.
    assert.equal((await ask(owner)).status, 200, 'the reset cleared the account quotas');
  });

  it('1. a password alone cannot enroll a factor: the code goes to the mailbox; a reset makes it enough', async () => {
    const { user } = await registerAndSignIn(app);
    const thief = (await signedIn(app, user.name, user.pwd, { source: '127.1.0.1' })).access_token;
    const before = app.smtp.messages.length;
    const localAddress = '127.1.0.1';
    const enrolled = await app.call('POST', '/acc/me/totp', { token: thief, json: { pwd: user.pwd }, localAddress });
    assert.equal(enrolled.status, 200, enrolled.text);
    const right = currentCode(enrolled.json.secret);
    const confirm = (json: object) => app.call('POST', '/acc/me/totp/confirm', { token: thief, json, localAddress });
    const missing = await confirm({ code: right });
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.json['invalid-params'].map((param: { name: string }) => param.name), ['email_code']);
    const guessed = await confirm({ code: right, email_code: 'ABCD-EFGH-IJKL-MNOP' });
    assert.equal(guessed.status, 403);
    assert.equal(guessed.json.type, 'urn:account-service:problem:wrong-email-code');
    const account = await app.call('GET', '/acc/me', { token: thief });
    assert.equal(account.json.totp_enabled, false, 'no factor without the mailbox');
    const notice = await mailTo(user.email, 'Your code to enable a second factor', before);
    assert.match(notice.text, /from the address 127\.1\.0\.1 to enable a second factor/);

    await resetFrom(user, '127.1.0.2', 'owner-after-reset');
    const ended = await app.call('GET', '/acc/me', { token: thief });
    assert.equal(ended.status, 401, "the reset ended the thief's session");
    const back = await passwordGrant(app, user.name, user.pwd, { source: '127.1.0.2' });
    assert.equal(back.status, 200, `the password alone signs the owner in, no mfa_required: ${back.text}`);
  });

  it('2. bounds factor guesses per account, known networks too: of 200 from 40 of them, 100 checked', async () => {
    const { user, token } = await registerAndSignIn(app);
    const keys = await keyedHashesOf(app);
    const knownTo = async (identifier: string) => {
      const key = keys.loginIdentifier(identifier);
      const [row] = await app.service.sql`
        SELECT count(*)::int AS n FROM login_known_clients WHERE identifier_key = ${key}`;
      return row!.n as number;
    };
    const networks = Array.from({ length: 40 }, (_, i) => `127.2.0.${i + 1}`);
    // The reproduction: with the password, signed in from 40 networks before the owner enrolls.
    for (const source of networks) await signedIn(app, user.name, user.pwd, { source });
    assert.ok((await knownTo(user.name)) >= 40, 'known: the 40, and the network of the registration\'s sign-in');
    const { secret } = await enableTotp(app, token, user);
    assert.equal(await knownTo(user.name), 0, 'confirming the factor forgot the networks that knew only the password');

    // The same 40 networks known again, this time by the owner's right codes (a fresh step each).
    for (const source of networks) {
      app.clock.advance(30);
      await signedIn(app, user.name, user.pwd, { source, otp: currentCode(secret) });
    }
    assert.equal(await knownTo(user.name), 40);
    // 200 wrong codes with the password, five from each known network (the first level's free
    // failures): before the fix every one was checked, 301 in two minutes with fresh networks.
    const started = Date.now();
    const right = currentCode(secret);
    const guess = (source: string) => () => passwordGrant(app, user.name, user.pwd, { source, otp: wrongCode(right) });
    const guesses = networks.flatMap((source) => Array.from({ length: 5 }, () => guess(source)));
    const statuses = await inBatches(guesses);
    const checked = statuses.filter((status) => status === 400).length;
    const refilled = () => ((Date.now() - started) / 1000) * (100 / 3600);
    const bound = 100 + Math.ceil(refilled());
    assert.ok(checked >= 100 && checked <= bound, `${checked} of 200 checked: 100 an hour, +${refilled()}`);
    const refused = statuses.filter((status) => status === 429).length;
    assert.equal(refused, 200 - checked, 'the rest 429, from known networks too');

    // The owner, at home with the right code, waits too; the mailbox ends it: a reset clears the
    // budget, and the thief's password no longer works.
    const owner = await passwordGrant(app, user.name, user.pwd, { source: networks[0], otp: right });
    if (refilled() < 1) assert.equal(owner.status, 429, 'unless a token refilled meanwhile');
    await resetFrom(user, '127.2.1.1', 'owner-after-reset');
    app.clock.advance(30);
    const back = await passwordGrant(app, user.name, user.pwd, { source: '127.2.1.1', otp: currentCode(secret) });
    assert.equal(back.status, 200, back.text);
  });

  it('3. after a reset the owner signs in from its network while a stranger keeps both budgets spent', async () => {
    const { user } = await registerAndSignIn(app);
    const home = '127.3.0.1';
    await signedIn(app, user.name, user.pwd, { source: home });
    // 210 wrong passwords from 60 networks, by name and by address in turn (at most four from
    // each, under the first level's free failures): both budgets of 100 spent.
    const guess = (round: number, i: number) => () => {
      const source = `127.3.${round}.${(i % 60) + 1}`;
      return passwordGrant(app, i % 2 === 0 ? user.name : user.email, 'wrong-password', { source });
    };
    const spend = (round: number) => inBatches(Array.from({ length: 210 }, (_, i) => guess(round, i)));
    const first = await spend(1);
    assert.deepEqual(first.slice(-2), [429, 429], 'both budgets spent');

    await resetFrom(user, home, 'owner-after-reset');
    const again = await spend(2);
    assert.deepEqual(again.slice(-2), [429, 429], 'the reset cleared the budgets, and the stranger spent them again');
    for (const identifier of [user.name, user.email]) {
      const back = await passwordGrant(app, identifier, user.pwd, { source: home });
      assert.equal(back.status, 200, `${identifier} from the network that completed the reset: ${back.text}`);
    }
    const elsewhere = await passwordGrant(app, user.name, user.pwd, { source: '127.3.9.9' });
    assert.equal(elsewhere.status, 429, 'a network never used waits, as documented');
    const stranger = await passwordGrant(app, user.name, 'wrong-password', { source: '127.3.2.1' });
    assert.equal(stranger.status, 429, 'the stranger gained nothing');
  });

  it('4. a recovery code refused with 429 is not used up, and works later', async (t) => {
    const limited = await startTestService({ env: { ACCOUNT_RATE_LIMIT: '3' } });
    t.after(() => limited.stop());
    const { user, token } = await registerAndSignIn(limited);
    const { recoveryCodes } = await enableTotp(limited, token, user);
    // This network's sign-ins spend its allowance (3 a minute): the registration's and two more.
    for (const code of recoveryCodes.slice(8)) {
      assert.equal((await passwordGrant(limited, user.name, user.pwd, { otp: code })).status, 200);
    }
    const refused = await passwordGrant(limited, user.name, user.pwd, { otp: recoveryCodes[0] });
    assert.equal(refused.status, 429, refused.text);
    const [row] = await limited.service.sql`
      SELECT count(*)::int AS n FROM recovery_codes JOIN accounts ON accounts.id = account_id
      WHERE name = ${user.name}`;
    assert.equal(row!.n, 8, 'the refused sign-in used no code');
    let later = refused;
    const signIn = () => passwordGrant(limited, user.name, user.pwd, { otp: recoveryCodes[0] });
    // The allowance refills one sign-in every 20 s (3 a minute), on the real clock.
    await waitUntil(async () => (later = await signIn()).status !== 429, 60_000);
    assert.equal(later.status, 200, later.text);
    const used = (m: { to: string; subject: string }) =>
      m.to === user.email && m.subject === 'A recovery code was used';
    const usedAgain = (m: { to: string; subject: string; text: string }) => used(m) && /Recovery codes left: 7\./.test(m.text);
    await limited.smtp.waitFor(usedAgain);
  });

  it('5. an e-mail change request that loses the race to a sign-out spends neither quota', async () => {
    const { user, token } = await registerAndSignIn(app);
    const keys = await keyedHashesOf(app);
    const { sql } = app.service;
    const [account] = await sql`SELECT id, public_id FROM accounts WHERE name = ${user.name}`;
    const newEmail = `${uniqueUser('moved').name}@example.com`;
    // The sign-out holds the account row: the request reserves both quotas, then waits for it.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked = false;
    const signOut = sql.begin(async (tx) => {
      await tx`SELECT 1 FROM accounts WHERE id = ${account!.id} FOR NO KEY UPDATE`;
      locked = true;
      await released;
      await tx`DELETE FROM sessions WHERE account_id = ${account!.id}`;
    }).then(() => 'signed out'); // then: the handle starts a transaction only once it is awaited
    await waitUntil(async () => locked);
    const request = app.call('POST', '/acc/me/email', { token, json: { pwd: user.pwd, email: newEmail } });
    await waitUntil(async () => (await sql`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'
        AND query ILIKE '%FROM accounts%FOR NO KEY UPDATE%'`)[0]!.n > 0);
    release();
    await signOut;
    const lost = await request;
    assert.equal(lost.status, 401, lost.text);
    const quotas = await sql`
      SELECT purpose FROM address_quotas
      WHERE (purpose = 'account-email-change' AND address_key = ${keys.address(account!.public_id as string)})
         OR (purpose = 'email-change' AND address_key = ${keys.address(newEmail)})`;
    assert.equal(quotas.length, 0, 'the lost request rolled back its quotas');
    const fresh = (await signedIn(app, user.name, user.pwd)).access_token;
    const again = await app.call('POST', '/acc/me/email', { token: fresh, json: { pwd: user.pwd, email: newEmail } });
    assert.equal(again.status, 204, `no cooldown left behind: ${again.text}`);
  });
  it("6. a stranger who types the account's own throttle identifiers as a username spends nothing of it", async () => {
    const { user, token } = await registerAndSignIn(app);
    const { secret } = await enableTotp(app, token, user);
    const publicId = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub as string;
    // 105 wrong guesses on each, two at most from each of 60 networks (the public id is no secret).
    const guess = (prefix: string, i: number) => () =>
      passwordGrant(app, `${prefix}:${publicId}`, 'wrong-password', { source: `127.6.${prefix.length}.${i % 60 + 1}` });
    const guesses = ['factor', 'account'].flatMap((prefix) => Array.from({ length: 105 }, (_, i) => guess(prefix, i)));
    const statuses = await inBatches(guesses);
    const refused = [statuses.slice(0, 105), statuses.slice(105)].map((half) => half.includes(429));
    assert.deepEqual(refused, [true, true], 'the typed identifiers are throttled as any other');
    app.clock.advance(30);
    const owner = await passwordGrant(app, user.name, user.pwd, { source: '127.6.9.1', otp: currentCode(secret) });
    assert.equal(owner.status, 200, `the factor's budget is the account's own: ${owner.text}`);
    const json = { old_pwd: user.pwd, new_pwd: 'owner-changed-6' };
    const localAddress = '127.6.9.2';
    const change = await app.call('PUT', '/acc/me/pwd', { token: owner.json.access_token, json, localAddress });
    assert.equal(change.status, 204, `so is the signed-in owner's: ${change.text}`);
  });
});
