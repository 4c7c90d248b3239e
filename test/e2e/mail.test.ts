import assert from 'node:assert/strict';
import { deleteAccount } from '../helpers/accounts.ts';
import { after, before, describe, it } from 'node:test';
import { codeIn, type ReceivedMail } from '../helpers/smtp.ts';
import { signIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { freePort } from '../helpers/ports.ts';
import { waitUntil } from '../helpers/wait.ts';

let app: TestService;
before(async () => {
  // The shortest code lifetime, so that the message has to say "1 min".
  app = await startTestService({ env: { REG_CODE_TTL: '60' } });
});
after(async () => {
  await app.stop();
});

describe('every message, as an SMTP server receives it', () => {
  it('is marked Auto-Submitted: auto-generated (RFC 3834), and counts agree with their nouns', async () => {
    const user = uniqueUser('mail');
    const received = (subject: string) => app.smtp.waitFor((message) => message.to === user.email && message.subject === subject);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: user })).status, 204);
    const codeMail = await received('Your registration code');
    assert.match(codeMail.text, /It is valid for 1 min, until /);

    assert.equal((await app.call('POST', '/acc/reg', { json: { code: codeIn(codeMail) } })).status, 204);
    const activeMail = await received('Your account is active');
    app.clock.advance(61);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...user, name: `${user.name}-again` } })).status, 204);
    const attemptMail = await received('Someone tried to register with your address');
    const token = await signIn(app, user.name, user.pwd);
    assert.equal((await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: `${user.pwd}-new` } })).status, 204);
    const changedMail = await received('Your password was changed');
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const resetCodeMail = await received('Your password reset code');
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(resetCodeMail), new_pwd: 'reset-password-1' } })).status, 204);
    const resetMail = await received('Your password was reset');
    const fresh = await signIn(app, user.name, 'reset-password-1');
    assert.equal((await deleteAccount(app, fresh, { email: user.email, pwd: 'reset-password-1' })).status, 204);
    const deletedMail = await received('Your account was deleted');

    const messages: ReceivedMail[] = [codeMail, activeMail, attemptMail, changedMail, resetCodeMail, resetMail, deletedMail];
    for (const mail of messages) {
      assert.match(mail.raw, /^Auto-Submitted: auto-generated\r?$/m, mail.subject);
      assert.doesNotMatch(mail.text, /\b1 [a-z]+s\b/, `${mail.subject}: a count of one with a plural noun`);
    }
  });
});

describe('the mail server, checked at start', () => {
  it('is said unreachable in one log line naming SMTP_URL, and shown by mail_server_up, 0 or 1', async () => {
    const closed = await freePort();
    const away = await startTestService({ env: { SMTP_URL: `smtp://127.0.0.1:${closed}` } });
    try {
      await waitUntil(async () => away.logs.some((line) => line.includes('SMTP_URL: the mail server cannot be reached')));
      const line = away.logs.find((entry) => entry.includes('SMTP_URL: the mail server cannot be reached'))!;
      assert.match(line, /"level":"error"/);
      assert.match(line, /ECONNREFUSED/);
      assert.match((await away.call('GET', '/metrics')).text, /^mail_server_up 0$/m);
      assert.equal((await away.call('GET', '/readyz')).status, 200, 'readiness stays about the database: mail waits in the outbox');
    } finally {
      await away.stop();
    }
    await waitUntil(async () => /^mail_server_up 1$/m.test((await app.call('GET', '/metrics')).text));
  });
});
