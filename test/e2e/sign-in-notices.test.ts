import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { clientFamily, noticeNetwork } from '../../src/features/sign-in-notices/announce.ts';
import { eventsOf } from '../helpers/accounts.ts';
import { codeIn } from '../helpers/smtp.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';
import { untilQueuesDrained } from '../helpers/wait.ts';

/**
 * A sign-in from a network and client family the account has not used in 30 days mails the
 * owner, by every way in; a known pair, the first sign-in from the network that registered the
 * account, and an owner who turned notices off get none; a day holds three at most.
 */
let app: TestService;
before(async () => {
  app = await startTestService();
});
after(() => app.stop());

const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
const chrome = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const subject = 'A new sign-in to your account';

async function signInAs(username: string, password: string, userAgent: string, localAddress = '127.0.0.1') {
  const json = { grant_type: 'password', username, password };
  const response = await app.call('POST', '/auth/token', { json, headers: { 'user-agent': userAgent }, localAddress });
  assert.equal(response.status, 200, response.text);
  return response.json.access_token as string;
}
/** The notices the address got, once every queued mail went out. */
async function noticesTo(email: string) {
  await untilQueuesDrained(app.service.sql);
  return app.smtp.messages.filter((mail) => mail.to === email && mail.subject === subject);
}

describe('the client family and the network of a notice', () => {
  it('names browsers, else the first product token, and compares IPv4 by /24 and IPv6 by /64', () => {
    assert.equal(clientFamily(firefox), 'Firefox');
    assert.equal(clientFamily(chrome), 'Chrome');
    assert.equal(clientFamily(`${chrome} Edg/131.0.0.0`), 'Edge');
    assert.equal(clientFamily('Mozilla/5.0 (iPhone) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1'), 'Safari');
    assert.equal(clientFamily('curl/8.5.0'), 'curl');
    assert.equal(clientFamily(''), 'an unnamed client');
    assert.equal(clientFamily('Your-account-is-locked.Call-+1-555-0100/1.0'), 'another program', 'never the caller\'s text');
    assert.equal(noticeNetwork('203.0.113.77'), noticeNetwork('203.0.113.5'));
    assert.notEqual(noticeNetwork('203.0.113.77'), noticeNetwork('203.0.114.77'));
    assert.equal(noticeNetwork('2001:db8:1:2:3::1'), noticeNetwork('2001:db8:1:2:ffff::9'));
  });
});

describe('sign-in notices', () => {
  it('announce a new client, not the first sign-in from the registering network nor a known pair', async () => {
    const { user } = await registerAndSignIn(app);
    assert.equal((await noticesTo(user.email)).length, 0, 'the first sign-in, from the network that registered');
    await signInAs(user.name, user.pwd, firefox);
    const [notice, ...more] = await noticesTo(user.email);
    assert.equal(more.length, 0);
    assert.match(notice!.text, /with the password, from the address 127\.0\.0\.1 with Firefox/);
    assert.match(notice!.text, /sign out everywhere and reset your password/);
    await signInAs(user.name, user.pwd, firefox);
    assert.equal((await noticesTo(user.email)).length, 1, 'a known pair is not announced again');
    app.clock.advance(31 * 24 * 3600);
    await signInAs(user.name, user.pwd, firefox);
    assert.equal((await noticesTo(user.email)).length, 2, 'past 30 days, the pair is new again');
  });

  it('announce a new network with a known client', async () => {
    const { user } = await registerAndSignIn(app);
    await signInAs(user.name, user.pwd, chrome, '127.0.0.1');
    app.clock.advance(61);
    await signInAs(user.name, user.pwd, chrome, '127.0.9.1');
    const notices = await noticesTo(user.email);
    assert.equal(notices.length, 2);
    assert.match(notices[1]!.text, /from the address 127\.0\.9\.1 with Chrome/);
  });

  it('are at most one a minute and three a day per account', async () => {
    const { user } = await registerAndSignIn(app);
    for (let network = 1; network <= 5; network += 1) {
      await signInAs(user.name, user.pwd, 'curl/8.5.0', `127.1.${network}.1`);
      app.clock.advance(61);
    }
    assert.equal((await noticesTo(user.email)).length, 3);
  });

  it('forget the account\'s networks and clients at a password reset, so a thief\'s place is new again', async () => {
    const { user } = await registerAndSignIn(app);
    await signInAs(user.name, user.pwd, firefox, '127.0.7.1');
    assert.equal((await noticesTo(user.email)).length, 1);
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your password reset code');
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'taken-back-again-4' } })).status, 204);
    app.clock.advance(61);
    await signInAs(user.name, 'taken-back-again-4', firefox, '127.0.7.1');
    assert.equal((await noticesTo(user.email)).length, 2, 'the pair seen before the reset is announced again');
  });

  it('remember at most 50 network and client pairs per account', async () => {
    const { user } = await registerAndSignIn(app);
    for (let index = 0; index < 60; index += 1) await signInAs(user.name, user.pwd, 'curl/8.5.0', `127.2.${index}.1`);
    const [row] = await app.service.sql`
      SELECT count(*)::int AS n FROM sign_in_clients c JOIN accounts a ON a.id = c.account_id WHERE a.name = ${user.name}`;
    assert.ok(row!.n <= 51, `${row!.n} pairs kept`);
    assert.ok(row!.n >= 50);
  });

  it('are turned off with the password, recorded, and on again by a reset', async () => {
    const { user, token } = await registerAndSignIn(app);
    const wrong = await app.call('PUT', '/acc/me/notices', { token, json: { sign_in: 'off', pwd: 'not-the-password' } });
    assert.equal(wrong.status, 403);
    const off = await app.call('PUT', '/acc/me/notices', { token, json: { sign_in: 'off', pwd: user.pwd } });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual(off.json, { sign_in: 'off' });
    assert.deepEqual((await app.call('GET', '/acc/me/notices', { token })).json, { sign_in: 'off' });
    assert.ok((await eventsOf(app, token)).some((event) => event.type === 'notices-off'));
    const told = await app.smtp.waitFor((mail) => mail.to === user.email && mail.subject === 'Sign-in notices were turned off');
    assert.match(told.text, /from the address 127\.0\.0\.1, with your password/);
    await signInAs(user.name, user.pwd, firefox);
    assert.equal((await noticesTo(user.email)).length, 0, 'off: no notice');

    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your password reset code');
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'after-the-reset-7' } })).status, 204);
    const fresh = await signInAs(user.name, 'after-the-reset-7', chrome);
    assert.deepEqual((await app.call('GET', '/acc/me/notices', { token: fresh })).json, { sign_in: 'on' });
    assert.equal((await noticesTo(user.email)).length, 1, 'on again after the reset');
  });
});
