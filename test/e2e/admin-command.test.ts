import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../src/commands.ts';
import { parseConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { passwordGrant, signedIn } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { runMain } from '../helpers/process.ts';
import { createAuthenticator } from '../helpers/authenticator.ts';
import { codeIn } from '../helpers/smtp.ts';
import { untilFailedSignIns, untilQueuesDrained } from '../helpers/wait.ts';
import { registerAndSignIn, startTestService, testEncryptionKeys, testSecret, uniqueUser, type TestService } from '../helpers/service.ts';
import { acceptedEvents, startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';

// The operator's command (issue 33) against a running service on a real PostgreSQL and SMTP server.
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const [origin, rpId] = ['https://app.example.test', 'example.test'];
const relyingParty = { WEBAUTHN_RP_ID: rpId, WEBAUTHN_ORIGINS: origin };
let database: { url: string; drop(): Promise<void> };
let receiver: Receiver;
let app: TestService;
let env: Record<string, string>;
before(async () => {
  database = await createTestDatabase();
  receiver = await startReceiver(secret);
  env = { DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SCRYPT_PARAMS: 'ln=4,r=8,p=1', WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret };
  app = await startTestService({
    databaseUrl: database.url,
    env: { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, ...relyingParty },
    outbox: { maxAttempts: 2, backoffBaseMs: 50 },
    webhooks: { pollMs: 100, maxAttempts: 2, backoffBaseMs: 50, backoffCapMs: 100 },
  });
});
after(async () => {
  await app.stop();
  await receiver.stop();
  await database.drop();
});

/** `admin …` as main.ts runs it, in this process: its exit code, stdout lines and the JSON of --json. */
async function admin(...args: string[]): Promise<{ code: number; out: string[]; json: any; errors: string[] }> {
  const config = parseConfig(env);
  const settled = { ...config, databaseUrl: database.url, tokenSecrets: config.tokenSecrets!, encryptionKeys: config.encryptionKeys! };
  const out: string[] = [];
  const errors: string[] = [];
  const code = await runCommand(['admin', ...args], settled, createLogger('info', (line) => errors.push(line)), (line) => out.push(line));
  return { code, out, errors, json: args.includes('--json') ? JSON.parse(out.at(-1)!) : null };
}

const refresh = (token: string) => app.call('POST', '/auth/token', { json: { grant_type: 'refresh_token', refresh_token: token } });

describe('admin disable and enable', () => {
  it('refuses every token at once, then sign-in with "disabled" for the owner only; enable lets the owner back', async () => {
    const { user, token } = await registerAndSignIn(app);
    const tokens = await signedIn(app, user.name, user.pwd);
    const disabled = await admin('disable', user.name, '--reason', 'chargeback fraud', '--json');
    assert.equal(disabled.code, 0, disabled.errors.join('\n'));
    assert.deepEqual(disabled.json, { account: user.name, changed: true, ended: 2 });
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401, 'an existing access token is refused at once');
    assert.equal((await app.call('GET', '/acc/me', { token: tokens.access_token })).status, 401);
    assert.equal((await refresh(tokens.refresh_token)).json.error, 'invalid_grant');
    const owner = await passwordGrant(app, user.name, user.pwd);
    assert.deepEqual([owner.status, owner.json.error], [400, 'account_disabled']);
    const stranger = await passwordGrant(app, user.name, 'not-the-password');
    assert.deepEqual([stranger.status, stranger.json.error], [400, 'invalid_grant'], 'a wrong password gets the usual answer');
    await untilFailedSignIns(app.service.sql, user.name, 1);
    const again = await admin('disable', user.email, '--reason', 'twice', '--json');
    assert.deepEqual(again.json, { account: user.email, changed: false, ended: 0 });

    const found = await admin('find', user.email, '--json');
    assert.equal(found.json.status, 'disabled');
    assert.equal(found.json.disabled_reason, 'chargeback fraud');
    assert.equal(found.json.live_sessions, 0);
    const events = (await admin('events', user.name, '--json')).json.events;
    const event = events.find((candidate: { type: string }) => candidate.type === 'account-disabled');
    assert.deepEqual(event, { ...event, actor: 'operator', reason: 'chargeback fraud', client_address: 'admin-command' });
    assert.equal(events[0].type, 'sign-in-failed', "newest first: the stranger's guess came after");

    assert.deepEqual((await admin('enable', found.json.id, '--json')).json, { account: found.json.id, changed: true });
    assert.equal((await passwordGrant(app, user.name, user.pwd)).status, 200);
    await receiver.waitFor((received) => ['account.disabled', 'account.enabled'].every((type) => acceptedEvents(received).some((event) => event.type === type && event.data.account_id === found.json.id)));
    const sent = acceptedEvents(receiver.received).find((event) => event.type === 'account.disabled' && event.data.account_id === found.json.id)!;
    assert.deepEqual(sent.data, { actor: 'operator', operator_reason: 'chargeback fraud', account_id: found.json.id });
  });

  it('issues no reset code while disabled: one mailed before goes, a request and a reset mail none', async () => {
    const { user } = await registerAndSignIn(app);
    const resetCode = (from: number) => (message: { to: string; subject: string }) => message.to === user.email
      && message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message as never) >= from;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const early = await app.smtp.waitFor(resetCode(0));
    await admin('disable', user.name, '--reason', 'the address was changed by an intruder');
    const late = await app.call('POST', '/acc/pwd', { json: { code: codeIn(early), new_pwd: 'set-while-disabled' } });
    assert.equal(late.status, 404, 'the code mailed before the disable went with it');
    app.clock.advance(61);
    const from = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204, 'answered as ever');
    await untilQueuesDrained(app.service.sql);
    assert.deepEqual(app.smtp.messages.slice(from).filter((message) => message.to === user.email), []);
    const reset = await admin('reset', user.name, '--json');
    assert.deepEqual(reset.json, { account: user.name, passkeys_removed: 0, identities_removed: 0, code_mailed: false });
    await admin('enable', user.name);
    app.clock.advance(61);
    await app.call('POST', '/acc/pwd/code', { json: { email: user.email } });
    const code = codeIn(await app.smtp.waitFor(resetCode(from)));
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'set-once-enabled' } })).status, 204);
    assert.equal((await passwordGrant(app, user.name, 'set-once-enabled')).status, 200);
  });

  it('answers clear exit codes: 2 for bad arguments, 1 for an unknown account', async () => {
    const { user } = await registerAndSignIn(app);
    assert.equal((await admin('disable', user.name)).code, 2, 'a reason is required');
    assert.equal((await admin('disable', user.name, '--reason', ' ')).code, 2);
    assert.equal((await admin('disable', user.name, '--reason', 'x', '--force', 'yes')).code, 2, 'unknown option');
    assert.equal((await admin('frobnicate')).code, 2);
    assert.equal((await admin('list', '--limit', '1000')).code, 2, 'the page size is bounded');
    const unknown = await admin('disable', 'nobody-at-all', '--reason', 'x', '--json');
    assert.deepEqual([unknown.code, unknown.json.error], [1, 'not-found']);
    assert.equal((await admin('find', 'nobody@example.com')).code, 1);
    assert.equal((await admin('outbox', 'retry')).code, 2, 'an id or --all-failed');
    assert.equal((await admin('outbox', 'retry', '999999')).code, 1);
  });
});

describe('admin find', () => {
  it('escapes control, separator and bidi characters in its output, as the log does', async () => {
    // The spec's \s lets a stranger put CR, VT and U+2028 in a phone number at registration.
    const user = { ...uniqueUser('phone'), phone: '+12\r345\u2028678\u000b9012' };
    await registerAndSignIn(app, user);
    const unsafe = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
    const text = await admin('find', user.name);
    assert.equal(text.code, 0, text.errors.join('\n'));
    assert.deepEqual(text.out.filter((line) => unsafe.test(line)), [], 'no line holds such a character raw');
    assert.ok(text.out.includes('phone: +12\\u000d345\\u2028678\\u000b9012'), text.out.join('\n'));
    const json = await admin('find', user.name, '--json');
    assert.doesNotMatch(json.out.at(-1)!, unsafe);
    assert.equal(json.json.phone, user.phone, 'the JSON line reads back as the stored value');
  });
});

describe('admin account actions', () => {
  it('reset: the old password stops working, every session ends, and the mailed code sets a new one', async () => {
    const { user, token } = await registerAndSignIn(app);
    const before = app.smtp.messages.length;
    assert.equal((await admin('reset', user.name, '--reason', 'taken over')).code, 0);
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401);
    assert.equal((await passwordGrant(app, user.name, user.pwd)).json.error, 'invalid_grant', 'whoever knew the password is out');
    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Set a new password for your account' && app.smtp.messages.indexOf(message) >= before);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'brand-new-password' } })).status, 204);
    assert.equal((await passwordGrant(app, user.name, 'brand-new-password')).status, 200);
  });

  it('reset removes every passkey, which would sign in on its own, with an event and a webhook for each', async () => {
    const { user, token } = await registerAndSignIn(app);
    const auth = createAuthenticator(-7);
    const options = await app.call('POST', '/acc/me/passkeys/options', { token, json: { pwd: user.pwd } });
    const mail = await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'Your code to add a passkey');
    const credential = auth.register(options.json.options, origin, rpId);
    const addition = { challenge_id: options.json.challenge_id, credential, email_code: codeIn(mail) };
    const added = await app.call('POST', '/acc/me/passkeys', { token, json: addition });
    assert.equal(added.status, 201, added.text);
    const passkeySignIn = async () => {
      const challenge = (await app.call('POST', '/auth/passkey/options')).json;
      const assertion = auth.assert(challenge.options, origin, rpId);
      const fields = { grant_type: 'urn:account-service:grant-type:passkey', challenge_id: challenge.challenge_id };
      return app.call('POST', '/auth/token', { json: { ...fields, credential: assertion } });
    };
    assert.equal((await passkeySignIn()).status, 200);
    assert.equal((await admin('find', user.name, '--json')).json.passkeys, 1);
    const reset = await admin('reset', user.name, '--reason', 'taken over', '--json');
    assert.deepEqual(reset.json, { account: user.name, passkeys_removed: 1, identities_removed: 0, code_mailed: true });
    assert.equal((await passkeySignIn()).json.error, 'invalid_grant', 'whoever added the passkey is out');
    assert.equal((await admin('find', user.name, '--json')).json.passkeys, 0);
    const events = (await admin('events', user.name, '--json')).json.events;
    assert.ok(events.some((e: { type: string; actor: string }) => e.type === 'passkey-removed' && e.actor === 'operator'));
    // The operator's act is the operator's in the owner's activity: no reset request of the owner's beside it.
    assert.ok(events.some((e: { type: string; actor: string }) => e.type === 'reset-forced' && e.actor === 'operator'));
    assert.ok(!events.some((e: { type: string }) => e.type === 'reset-requested'), JSON.stringify(events));
    const removed = (event: { type: string; data: Record<string, unknown> }) =>
      event.type === 'passkey.removed' && event.data.passkey_id === added.json.id && event.data.actor === 'operator';
    await receiver.waitFor((received) => acceptedEvents(received).some(removed));
  });

  it('end-sessions, unlock, remove-second-factor and delete', async () => {
    const { user, token } = await registerAndSignIn(app);
    assert.deepEqual((await admin('end-sessions', user.name, '--json')).json, { account: user.name, ended: 1 });
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401);
    for (let i = 0; i < 6; i++) await passwordGrant(app, user.name, 'wrong-password', { address: '203.0.113.9' });
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.9' })).status, 429);
    assert.equal((await admin('find', user.name, '--json')).json.throttle.blocked_networks, 1);
    assert.deepEqual((await admin('unlock', user.name, '--json')).json, { account: user.name, matched_account: true });
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.9' })).status, 200);
    assert.deepEqual((await admin('remove-second-factor', user.name, '--json')).json, { account: user.name, removed: false });
    assert.equal((await admin('delete', user.name, '--reason', 'asked by mail')).code, 0);
    assert.equal((await admin('find', user.name)).code, 1);
    await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your account was deleted');
  });

  it('list: newest first, paged by cursor, filtered by status', async () => {
    const names = [];
    for (let i = 0; i < 3; i++) names.push((await registerAndSignIn(app, uniqueUser('listed'))).user.name);
    const first = (await admin('list', '--limit', '2', '--json')).json;
    assert.deepEqual(first.accounts.map((account: { name: string }) => account.name), [names[2], names[1]]);
    const second = (await admin('list', '--limit', '2', '--cursor', first.next, '--json')).json;
    assert.equal(second.accounts[0].name, names[0]);
    const disabled = (await admin('list', '--status', 'disabled', '--json')).json.accounts;
    assert.ok(disabled.every((account: { status: string }) => account.status === 'disabled'));
    const readable = await admin('list', '--limit', '1');
    assert.match(readable.out.join('\n'), new RegExp(`name="${names[2]}"`));
  });
});

describe('admin outbox and webhooks', () => {
  it('retry delivers a message that failed while the SMTP server was down', async () => {
    const user = uniqueUser('smtp-down');
    app.smtp.failFor(user.email, 2, 421);
    await app.call('POST', '/acc/reg/code', { json: user });
    let failed: Array<{ id: string; kind: string }> = [];
    for (let i = 0; i < 100 && failed.length === 0; i++) {
      failed = (await admin('outbox', 'list-failed', '--json')).json.failed.filter((entry: { kind: string }) => entry.kind === 'registration-code');
      if (failed.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(failed.length, 1, 'the code failed after its two attempts');
    assert.deepEqual((await admin('outbox', 'retry', failed[0]!.id, '--json')).json, { retried: [failed[0]!.id] });
    await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your registration code');
    assert.equal((await admin('outbox', 'retry', '--all-failed', '--json')).json.retried.includes(failed[0]!.id), false);
  });

  it('retry delivers a webhook event that failed while the receiver was down', async () => {
    receiver.mode = 'fail';
    const { user, token } = await registerAndSignIn(app);
    const account = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub as string;
    await admin('end-sessions', user.name);
    let failed: Array<{ id: string; account: string }> = [];
    for (let i = 0; i < 100 && failed.length === 0; i++) {
      failed = (await admin('webhooks', 'list-failed', '--json')).json.failed.filter((entry: { account: string }) => entry.account === account);
      if (failed.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(failed.length >= 1);
    receiver.mode = 'ok';
    assert.equal((await admin('webhooks', 'retry', '--all-failed')).code, 0);
    await receiver.waitFor((received) => acceptedEvents(received).some((event) => event.type === 'sessions.revoked' && event.data.account_id === account));
  });
});

describe('node main.ts admin', () => {
  it('runs from the command line with the service environment: JSON on stdout, exit 0, 1 and 2', async () => {
    const { user } = await registerAndSignIn(app);
    const run = async (args: string[]) => {
      const running = runMain(env, ['admin', ...args]);
      return { code: await running.exit, lines: running.lines, stderr: running.stderr() };
    };
    const found = await run(['find', user.name, '--json']);
    assert.equal(found.code, 0, found.stderr);
    assert.equal(JSON.parse(found.lines.at(-1)!).name, user.name);
    assert.equal((await run(['find', 'nobody-here'])).code, 1);
    assert.equal((await run(['nonsense'])).code, 2);
  });
});
