import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { passwordGrant } from '../helpers/accounts.ts';
import { codeIn } from '../helpers/smtp.ts';
import { registerAndSignIn, requestCode, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { untilQueuesDrained } from '../helpers/wait.ts';

let app: TestService;
before(async () => {
  app = await startTestService();
});
after(async () => {
  await app.stop();
});

/** Asks for a reset code for `email` and returns it as the mail delivered it. */
async function requestResetCode(email: string): Promise<string> {
  const before = app.smtp.messages.length;
  const response = await app.call('POST', '/acc/pwd/code', { json: { email } });
  assert.equal(response.status, 204);
  const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
  return codeIn(mail);
}

describe('POST /acc/pwd/code and POST /acc/pwd', () => {
  it('mails a code to the stored address, and the code sets a new password that works at once', async () => {
    const { user } = await registerAndSignIn(app);
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email.toUpperCase() } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
    assert.equal(mail.to, user.email, 'to the address as stored, not as typed');
    assert.match(mail.text, /valid for 15 min, until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/);
    assert.match(mail.text, /from the address 127\.0\.0\.1/);
    assert.match(mail.text, /Your password is unchanged\. If it was not you, ignore this message\./);

    const reset = await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail).toLowerCase(), new_pwd: 'brand-new-password' } });
    assert.equal(reset.status, 204, 'any letter case');
    assert.equal(reset.text, '');
    assert.equal((await passwordGrant(app, user.name, user.pwd)).status, 400, 'the old password is refused');
    assert.equal((await passwordGrant(app, user.name, 'brand-new-password')).status, 200, 'the new one works');
    const notice = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your password was reset');
    assert.match(notice.text, /reset with an e-mailed code at .* from the address 127\.0\.0\.1/);
  });

  it('answers 404 for a used code and 410 for an expired one', async () => {
    const { user } = await registerAndSignIn(app);
    const code = await requestResetCode(user.email);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'new-password-1' } })).status, 204);
    const used = await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'new-password-2' } });
    assert.equal(used.status, 404);
    assert.equal(used.json.type, 'urn:account-service:problem:unknown-code');

    app.clock.advance(61);
    const late = await requestResetCode(user.email);
    app.clock.advance(901);
    const expired = await app.call('POST', '/acc/pwd', { json: { code: late, new_pwd: 'new-password-3' } });
    assert.equal(expired.status, 410);
    assert.equal(expired.json.type, 'urn:account-service:problem:code-expired');
    assert.equal((await passwordGrant(app, user.name, 'new-password-1')).status, 200, 'the password set by the used code stays');
  });

  it('keeps codes to their purpose: a registration code is unknown to reset, a reset code to activation', async () => {
    const pending = uniqueUser();
    const registrationCode = await requestCode(app, pending);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: registrationCode, new_pwd: 'new-password-1' } })).status, 404);
    const { user } = await registerAndSignIn(app);
    const resetCode = await requestResetCode(user.email);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: resetCode } })).status, 404);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: registrationCode } })).status, 204, 'both still work where they belong');
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: resetCode, new_pwd: 'new-password-1' } })).status, 204);
  });

  it('checks the body before the code, so a refused password does not use the code up', async () => {
    const { user } = await registerAndSignIn(app);
    const code = await requestResetCode(user.email);
    const short = await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'short' } });
    assert.equal(short.status, 400);
    assert.deepEqual(short.json['invalid-params'].map((param: { name: string }) => param.name), ['new_pwd']);
    for (const body of [{ code }, { new_pwd: 'new-password-1' }, { code: 'not-a-code', new_pwd: 'new-password-1' }, { code, new_pwd: 'new-password-1', extra: 1 }, { code, new_pwd: 12345678 }]) {
      assert.equal((await app.call('POST', '/acc/pwd', { json: body })).status, 400, JSON.stringify(body));
    }
    assert.equal((await app.call('POST', '/acc/pwd', { body: 'not json', headers: { 'content-type': 'application/json' } })).status, 400);
    assert.equal((await app.call('POST', '/acc/pwd', { body: '{}', headers: { 'content-type': 'text/plain' } })).status, 415);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'new-password-1' } })).status, 204, 'the code still works');
  });

  it('refuses bad bodies on the code request', async () => {
    for (const body of [{}, { email: 'not-an-address' }, { email: 42 }, { email: null }, { email: 'a@example.com', name: 'x' }]) {
      const response = await app.call('POST', '/acc/pwd/code', { json: body });
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.json.type, 'urn:account-service:problem:invalid-fields');
    }
    assert.equal((await app.call('POST', '/acc/pwd/code', { body: '[]', headers: { 'content-type': 'application/json' } })).status, 400);
    assert.equal((await app.call('POST', '/acc/pwd/code', { body: 'x'.repeat(9000), headers: { 'content-type': 'application/json' } })).status, 413);
  });

  it('refuses every token of the account after a reset', async () => {
    const { user, token } = await registerAndSignIn(app);
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 200);
    const code = await requestResetCode(user.email);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'new-password-1' } })).status, 204);
    const refused = await app.call('GET', '/acc/me', { token });
    assert.equal(refused.status, 401);
    assert.match(String(refused.headers['www-authenticate']), /invalid_token/);
  });

  it('lifts a sign-in lock-out', async () => {
    const { user } = await registerAndSignIn(app);
    for (let i = 0; i < 8; i += 1) await passwordGrant(app, user.name, 'wrong-password');
    assert.equal((await passwordGrant(app, user.name, user.pwd)).status, 429, 'locked out');
    const code = await requestResetCode(user.email);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'new-password-1' } })).status, 204);
    assert.equal((await passwordGrant(app, user.name, 'new-password-1')).status, 200, 'the owner is back in at once');
  });

  it('keeps older live codes when a new one is sent, and a reset ends every code of the account', async () => {
    const { user } = await registerAndSignIn(app);
    const first = await requestResetCode(user.email);
    app.clock.advance(61);
    const second = await requestResetCode(user.email);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: first, new_pwd: 'new-password-1' } })).status, 204, 'a newer code does not void an older live one');
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: second, new_pwd: 'new-password-2' } })).status, 404, 'using one used them all');
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM one_time_codes c JOIN accounts a ON a.id = c.account_id WHERE a.email = ${user.email}`;
    assert.equal(row!.n, 0);
  });

  it('sends nothing to an address without an account, and answers it alike', async () => {
    const pending = uniqueUser();
    await requestCode(app, pending);
    const nobody = uniqueUser();
    const before = app.smtp.messages.length;
    for (const email of [pending.email, nobody.email]) assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email } })).status, 204);
    // Both requests resolved and every message they caused delivered: none may have been.
    await untilQueuesDrained(app.service.sql);
    assert.deepEqual(app.smtp.messages.slice(before).map((message) => message.to), [], 'no message to either');
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM one_time_codes WHERE purpose = 'reset' AND account_id IN (SELECT id FROM accounts WHERE email IN (${pending.email}, ${nobody.email}))`;
    assert.equal(row!.n, 0);
  });

  it('lets exactly one of ten parallel resets with one code succeed', async () => {
    const { user } = await registerAndSignIn(app);
    const code = await requestResetCode(user.email);
    const passwords = Array.from({ length: 10 }, (_, index) => `parallel-password-${index}`);
    const statuses = (await Promise.all(passwords.map((new_pwd) => app.call('POST', '/acc/pwd', { json: { code, new_pwd } })))).map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 204).length, 1, `statuses: ${statuses}`);
    assert.equal(statuses.filter((status) => status === 404).length, 9, `statuses: ${statuses}`);
    const winner = passwords[statuses.indexOf(204)]!;
    assert.equal((await passwordGrant(app, user.name, winner)).status, 200, 'the winning request set the password');
    await untilQueuesDrained(app.service.sql);
    const notices = app.smtp.messages.filter((message) => message.to === user.email && message.subject === 'Your password was reset');
    assert.equal(notices.length, 1, 'one notice, of the reset that won');
  });

  it('sends one code for parallel requests on one address from a network it does not know', async () => {
    const { user } = await registerAndSignIn(app);
    app.clock.advance(61);
    const before = app.smtp.messages.length;
    // Not the network that signed in (127.0.0.1), which has a quota of its own past the address's.
    const ask = () => app.call('POST', '/acc/pwd/code', { json: { email: user.email }, localAddress: '127.54.0.1' });
    const statuses = (await Promise.all(Array.from({ length: 8 }, ask))).map((response) => response.status);
    assert.deepEqual(statuses.sort(), [204, 429, 429, 429, 429, 429, 429, 429]);
    await untilQueuesDrained(app.service.sql);
    assert.equal(app.smtp.messages.slice(before).filter((message) => message.subject === 'Your password reset code').length, 1);
  });

  it('stores reset codes only as hashes, and erases the sent message', async () => {
    const { user } = await registerAndSignIn(app);
    const code = await requestResetCode(user.email);
    const dump = JSON.stringify(await app.service.sql`SELECT * FROM one_time_codes`) + JSON.stringify(await app.service.sql`SELECT * FROM outbox`);
    assert.equal(dump.toUpperCase().includes(code), false);
    assert.equal(app.logs.join('').toUpperCase().includes(code), false, 'nor in the log');
  });
});
