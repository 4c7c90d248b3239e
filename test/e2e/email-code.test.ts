import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enableTotp, totpStepOf } from '../helpers/accounts.ts';
import { codeIn } from '../helpers/smtp.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { untilFailedSignIns, untilQueuesDrained } from '../helpers/wait.ts';

/**
 * Sign-in by e-mailed code (FEATURES email-code): POST /auth/code answers alike, a code goes
 * only to an account's address, the code grant starts a session once, the second factor is still
 * asked for, and every such sign-in is announced to the owner.
 */
let app: TestService;
before(async () => {
  app = await startTestService({
    env: { FEATURES: 'second-factor,passkeys,email-change,common-passwords,sign-in-notices,export,email-code' },
  });
});
after(() => app.stop());

const grantType = 'urn:account-service:grant-type:email-code';
const codeGrant = (email: string, code: string, otp?: string) =>
  app.call('POST', '/auth/token', { json: { grant_type: grantType, email, code, ...(otp === undefined ? {} : { otp }) } });

async function mailedCode(email: string): Promise<string> {
  const before = app.smtp.messages.length;
  const asked = await app.call('POST', '/auth/code', { json: { email } });
  assert.equal(asked.status, 204, asked.text);
  const mail = await app.smtp.waitFor((message) => message.to === email && message.subject === 'Your sign-in code' && app.smtp.messages.indexOf(message) >= before);
  assert.match(mail.text, /from the address 127\.0\.0\.1/);
  return codeIn(mail);
}

describe('sign-in by e-mailed code', () => {
  it('mails a code that signs in once, and announces the sign-in', async () => {
    const { user } = await registerAndSignIn(app);
    const code = await mailedCode(user.email);
    const signedIn = await codeGrant(user.email, code.toLowerCase());
    assert.equal(signedIn.status, 200, signedIn.text);
    assert.equal(signedIn.json.token_type, 'Bearer');
    assert.equal((await app.call('GET', '/acc/me', { token: signedIn.json.access_token })).json.name, user.name);
    const again = await codeGrant(user.email, code);
    assert.equal(again.status, 400);
    assert.equal(again.json.error, 'invalid_grant', 'used once');
    const notice = await app.smtp.waitFor((mail) => mail.to === user.email && mail.subject === 'A new sign-in to your account');
    assert.match(notice.text, /with a code mailed to this address/);
  });

  it('refuses a code for another address, a wrong code and an expired one alike', async () => {
    const { user } = await registerAndSignIn(app);
    const other = (await registerAndSignIn(app)).user;
    const code = await mailedCode(user.email);
    for (const [email, attempt] of [[other.email, code], [user.email, 'ABCD-EFGH-IJKL-MNOP']] as const) {
      const refused = await codeGrant(email, attempt);
      assert.equal(refused.status, 400);
      assert.equal(refused.json.error, 'invalid_grant');
    }
    app.clock.advance(601);
    assert.equal((await codeGrant(user.email, code)).json.error, 'invalid_grant', 'ten minutes');
  });

  it('mails nothing to an address without an account, with the same answer, under the address\'s quota', async () => {
    const nobody = uniqueUser('nobody').email;
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/auth/code', { json: { email: nobody } })).status, 204);
    await untilQueuesDrained(app.service.sql);
    assert.equal(app.smtp.messages.slice(before).filter((mail) => mail.to === nobody).length, 0);
    const soon = await app.call('POST', '/auth/code', { json: { email: nobody } });
    assert.equal(soon.status, 429);
    assert.match(soon.json.type as string, /too-soon$/);
  });

  it('announces a code sign-in past the notices\' daily cap, saying when the network and client are known', async () => {
    const { user } = await registerAndSignIn(app);
    for (let network = 1; network <= 4; network += 1) {
      const json = { grant_type: 'password', username: user.name, password: user.pwd };
      assert.equal((await app.call('POST', '/auth/token', { json, localAddress: `127.3.${network}.1` })).status, 200);
      app.clock.advance(61);
    }
    await untilQueuesDrained(app.service.sql);
    const subject = 'A new sign-in to your account';
    const count = () => app.smtp.messages.filter((mail) => mail.to === user.email && mail.subject === subject).length;
    assert.equal(count(), 3, 'the cap: three a day');
    const signedIn = await codeGrant(user.email, await mailedCode(user.email));
    assert.equal(signedIn.status, 200, signedIn.text);
    await untilQueuesDrained(app.service.sql);
    assert.equal(count(), 4, 'a code sign-in is announced past the cap');
    const notice = app.smtp.messages.filter((mail) => mail.to === user.email && mail.subject === subject).at(-1)!;
    assert.doesNotMatch(notice.text, /not been used from/, 'from the network and client it registered with: known');
  });

  it('loses a code asked for before the owner\'s password reset', async () => {
    const { user } = await registerAndSignIn(app);
    const code = await mailedCode(user.email);
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your password reset code');
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'the-owner-is-back-3' } })).status, 204);
    assert.equal((await codeGrant(user.email, code)).json.error, 'invalid_grant', 'the reset voids every pending code');
  });

  it('still asks for the second factor, and the code stays usable for the request with one', async () => {
    const { user, token } = await registerAndSignIn(app);
    const { secret, step } = await enableTotp(app, token, user);
    app.clock.advance(61);
    const code = await mailedCode(user.email);
    const asked = await codeGrant(user.email, code);
    assert.equal(asked.status, 400);
    assert.equal(asked.json.error, 'mfa_required');
    const otp = referenceTotp(secret, Math.max(step + 1, totpStepOf(app)) * 30);
    const signedIn = await codeGrant(user.email, code, otp);
    assert.equal(signedIn.status, 200, signedIn.text);

    app.clock.advance(61);
    const another = await mailedCode(user.email);
    const wrong = await codeGrant(user.email, another, otp === '000000' ? '111111' : '000000');
    assert.equal(wrong.json.error, 'invalid_grant');
    app.clock.advance(30);
    const right = referenceTotp(secret, totpStepOf(app) * 30);
    assert.equal((await codeGrant(user.email, another, right)).json.error, 'invalid_grant', 'a wrong otp used the code up');
    await untilFailedSignIns(app.service.sql, user.name, 1); // the wrong otp is the owner's failed sign-in
  });

  it('is off by default: the route is unknown and the grant unsupported', async () => {
    const off = await startTestService();
    try {
      assert.equal((await off.call('POST', '/auth/code', { json: { email: 'a@example.com' } })).status, 404);
      const grant = await off.call('POST', '/auth/token', { json: { grant_type: grantType, email: 'a@example.com', code: 'ABCD-EFGH-IJKL-MNOP' } });
      assert.equal(grant.json.error, 'unsupported_grant_type');
    } finally {
      await off.stop();
    }
  });
});
