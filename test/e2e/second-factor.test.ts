import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { deleteAccount, emailChangeBody, enableTotp, eventsOf, passwordGrant, signedIn, startTotp } from '../helpers/accounts.ts';
import { codeIn, type ReceivedMail } from '../helpers/smtp.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';

let app: TestService;
before(async () => {
  app = await startTestService({ env: { TRUST_PROXY: '1', TOKEN_ISSUER: 'https://accounts.example' } });
});
after(async () => {
  await app.stop();
});

let nextAddress = 0;
/** A client address of its own for each call site that must not share a throttle with another. */
const freshAddress = () => `198.51.100.${(nextAddress += 1)}`;
const from = (address: string) => ({ 'x-forwarded-for': address });

/** The service's current RFC 6238 step (its clock, which a test may move forward). */
const stepNow = () => Math.floor(app.clock.now().getTime() / 30_000);
/** The code of a step, computed by the tests' own RFC 6238 implementation. */
const codeAt = (secret: string, step: number) => referenceTotp(secret, step * 30);

/** Waits out the last seconds of a step, so that a step computed here is still the service's when it answers. */
async function awayFromStepEnd(): Promise<void> {
  const intoStep = app.clock.now().getTime() % 30_000;
  if (intoStep > 26_000) await delay(30_000 - intoStep + 100);
}

const mailTo = (to: string, subject: string) => app.smtp.waitFor((message) => message.to === to && message.subject === subject);

/** An account with an active factor: its secret (base32), recovery codes and the step its confirmation used. */
async function withFactor() {
  const { user, token } = await registerAndSignIn(app);
  await awayFromStepEnd();
  return { user, token, ...(await enableTotp(app, token, user)) };
}

/** A confirmation with the mailed code (`email_code`); a well-formed stand-in where no enrollment mailed one. */
const confirmTotp = (token: string, code: string, emailCode = 'ABCD-EFGH-IJKL-MNOP', address = freshAddress()) =>
  app.call('POST', '/acc/me/totp/confirm', { token, json: { code, email_code: emailCode }, headers: from(address) });

describe('enrolling a second factor', () => {
  it('answers a base32 secret and an otpauth URI, pending until a right code confirms it; asking again replaces it', async () => {
    const { user, token } = await registerAndSignIn(app);
    const before = app.smtp.messages.length;
    const headers = from('198.51.100.200');
    const first = await app.call('POST', '/acc/me/totp', { token, json: { pwd: user.pwd }, headers });
    assert.equal(first.status, 200);
    assert.equal(first.headers['cache-control'], 'no-store');
    const since = (count: number, subject: string) => (m: ReceivedMail) =>
      m.to === user.email && m.subject === subject && app.smtp.messages.indexOf(m) >= count;
    const codeMail = await app.smtp.waitFor(since(before, 'Your code to enable a second factor'));
    const whatAndWhere = /from the address 198\.51\.100\.200 to enable a second factor \(an authenticator app\)/;
    assert.match(codeMail.text, whatAndWhere, 'what is added, and from where');
    assert.equal(codeIn(codeMail).length, 19);
    const tooSoon = await app.call('POST', '/acc/me/totp', { token, json: { pwd: user.pwd } });
    assert.equal(tooSoon.status, 429, 'each request mails: once a minute per account');
    assert.equal(tooSoon.json.type, 'urn:account-service:problem:too-soon');
    assert.match(first.json.secret, /^[A-Z2-7]{32}$/, '160 bits in base32');
    const uri = new URL(first.json.uri);
    assert.equal(uri.protocol, 'otpauth:');
    assert.equal(uri.host, 'totp');
    assert.equal(decodeURIComponent(uri.pathname), `/accounts.example:${user.name}`, 'the host of the issuer URL: the format forbids its colon');
    assert.deepEqual(Object.fromEntries(uri.searchParams), { secret: first.json.secret, issuer: 'accounts.example', algorithm: 'SHA1', digits: '6', period: '30' });
    assert.equal((await app.call('GET', '/acc/me', { token })).json.totp_enabled, false, 'pending is not active');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: freshAddress() })).status, 200, 'a pending factor asks nothing at sign-in');

    app.clock.advance(61);
    const second = await startTotp(app, token, user);
    assert.notEqual(second.secret, first.json.secret);
    await awayFromStepEnd();
    const replaced = await confirmTotp(token, codeAt(first.json.secret, stepNow()), second.emailCode);
    assert.equal(replaced.status, 403, 'the replaced secret no longer confirms');
    assert.equal(replaced.json.type, 'urn:account-service:problem:wrong-otp');
    const oldCode = await confirmTotp(token, codeAt(second.secret, stepNow()), codeIn(codeMail));
    assert.equal(oldCode.status, 403, 'the replaced enrollment\'s mailed code no longer confirms');
    assert.equal(oldCode.json.type, 'urn:account-service:problem:wrong-email-code');

    const other = await signedIn(app, user.name, user.pwd, { address: freshAddress() });
    const noticed = app.smtp.messages.length;
    const confirmed = await confirmTotp(token, codeAt(second.secret, stepNow()), second.emailCode);
    assert.equal(confirmed.status, 200, confirmed.text);
    const codes = confirmed.json.recovery_codes as string[];
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    for (const code of codes) assert.match(code, /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/, '16 base32 letters: 80 bits');
    const notice = await app.smtp.waitFor(since(noticed, 'A second factor was enabled'));
    assert.match(notice.text, /enabled for your account at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z .* with the code/);
    assert.match(notice.text, /contact them/, 'what helps when the owner did not do it: the operator');
    assert.equal((await app.call('GET', '/acc/me', { token })).json.totp_enabled, true);
    const ended = await app.call('GET', '/acc/me', { token: other.access_token });
    assert.equal(ended.status, 401, 'enrolling ends the other sessions');
    assert.ok((await eventsOf(app, token)).some((event) => event.type === 'totp-enabled'));

    // Stored sealed, and the recovery codes only as hashes.
    const [account] = await app.service.sql`SELECT id FROM accounts WHERE name = ${user.name}`;
    const rows = JSON.stringify(await app.service.sql`SELECT * FROM second_factors WHERE account_id = ${account!.id}`) + JSON.stringify(await app.service.sql`SELECT * FROM recovery_codes WHERE account_id = ${account!.id}`);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
    const bits = second.secret.replace(/./g, (char: string) => alphabet.indexOf(char).toString(2).padStart(5, '0'));
    const secretBytes = Buffer.from(bits.match(/.{8}/g)!.map((byte: string) => parseInt(byte, 2)));
    const traces = [second.secret, secretBytes.toString('hex'), secretBytes.toString('base64'), ...codes];
    for (const trace of [...traces, ...codes.map((code) => code.replaceAll('-', ''))]) {
      assert.equal(rows.includes(trace), false, 'no secret in plain text at rest');
    }
    for (const line of app.logs) {
      const leaked = line.includes(second.secret) || codes.some((code) => line.includes(code));
      assert.equal(leaked, false, 'no secret in the log');
    }
  });

  it('refuses enrolling twice (409), confirming with no pending enrollment (409), a malformed code (400) and a wrong code (403)', async () => {
    const { user, token } = await registerAndSignIn(app);
    const none = await confirmTotp(token, '123456');
    assert.equal(none.status, 409);
    assert.equal(none.json.type, 'urn:account-service:problem:totp-not-pending');

    const enrolled = await startTotp(app, token, user);
    const emailCode = enrolled.emailCode;
    const malformed: object[] = [{}, { code: '12345' }, { code: '1234567' }, { code: 'abcdef' }, { code: 123456 }];
    malformed.push({ code: '123456', extra: 1 });
    const malformedBodies = malformed.map((body) => ({ email_code: emailCode, ...body }));
    for (const body of [...malformedBodies, { code: '123456' }, { code: '123456', email_code: 'ABCD-EFGH-IJKL' }]) {
      const malformed = await app.call('POST', '/acc/me/totp/confirm', { token, json: body });
      assert.equal(malformed.status, 400, JSON.stringify(body));
      assert.equal(malformed.json.type, 'urn:account-service:problem:invalid-fields');
    }
    await awayFromStepEnd();
    const right = codeAt(enrolled.secret, stepNow());
    const wrongCode = right === '000000' ? '000001' : '000000';
    const wrong = await confirmTotp(token, wrongCode, emailCode);
    assert.equal(wrong.status, 403);
    assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-otp');
    const confirmed = await confirmTotp(token, right, emailCode);
    assert.equal(confirmed.status, 200, 'a wrong code used up neither the step nor the mailed code');

    app.clock.advance(61);
    const twice = await app.call('POST', '/acc/me/totp', { token, json: { pwd: user.pwd } });
    assert.equal(twice.status, 409);
    assert.equal(twice.json.type, 'urn:account-service:problem:totp-active');
    const again = await confirmTotp(token, right, emailCode);
    assert.equal(again.status, 409);
    assert.equal(again.json.type, 'urn:account-service:problem:totp-active');
  });

  it('counts wrong confirmation codes in the throttle, so that a stolen token cannot guess its way to the recovery codes', async () => {
    const { user, token } = await registerAndSignIn(app);
    const enrolled = await startTotp(app, token, user);
    await awayFromStepEnd();
    const right = codeAt(enrolled.secret, stepNow());
    const wrong = right === '000000' ? '000001' : '000000';
    const address = freshAddress();
    const confirm = (code: string) => confirmTotp(token, code, enrolled.emailCode, address);
    for (let i = 0; i < 5; i += 1) assert.equal((await confirm(wrong)).status, 403);
    const throttled = await confirm(right);
    assert.equal(throttled.status, 429);
    assert.equal(throttled.json.type, 'urn:account-service:problem:throttled');
    assert.equal((await app.call('GET', '/acc/me', { token })).json.totp_enabled, false, 'the throttled right code activated nothing');
  });

  it('needs the token, a well-formed body and the right password', async () => {
    const { token } = await registerAndSignIn(app);
    assert.equal((await app.call('POST', '/acc/me/totp', { json: { pwd: 'whatever-1' } })).status, 401);
    const json = { code: '123456', email_code: 'ABCD-EFGH-IJKL-MNOP' };
    const unsigned = await app.call('POST', '/acc/me/totp/confirm', { json });
    assert.equal(unsigned.status, 401);
    assert.equal((await app.call('DELETE', '/acc/me/totp', { json: { pwd: 'whatever-1', otp: '123456' } })).status, 401);
    for (const body of [{}, { pwd: 'short' }, { pwd: 12345678 }, { pwd: 'long-enough', otp: '123456' }]) {
      assert.equal((await app.call('POST', '/acc/me/totp', { token, json: body })).status, 400, JSON.stringify(body));
    }
    const wrong = await app.call('POST', '/acc/me/totp', { token, json: { pwd: 'wrong-password' } });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-password');
  });
});

describe('signing in with a second factor', () => {
  it('asks for otp once the password is right, accepts drift of one step, and each step once', async () => {
    const { user, secret, step } = await withFactor();
    const unknown = await passwordGrant(app, 'no-such-user', user.pwd, { address: freshAddress() });
    const wrongPassword = await passwordGrant(app, user.name, 'wrong-password', { address: freshAddress() });
    const wrongPasswordWithOtp = await passwordGrant(app, user.name, 'wrong-password', { otp: codeAt(secret, step + 1), address: freshAddress() });
    for (const answer of [unknown, wrongPassword, wrongPasswordWithOtp]) {
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.json, unknown.json, 'a wrong password tells nothing of the factor');
    }
    assert.equal(unknown.json.error, 'invalid_grant');

    const missing = await passwordGrant(app, user.name, user.pwd, { address: freshAddress() });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error, 'mfa_required');
    assert.equal(typeof missing.json.error_description, 'string');
    for (const malformed of ['12345', '1234567', 'abcdef', '12345a', 'abcd-efgh-ijkl']) {
      const answer = await passwordGrant(app, user.name, user.pwd, { otp: malformed, address: freshAddress() });
      assert.equal(answer.status, 400, malformed);
      assert.equal(answer.json.error, 'invalid_request', malformed);
    }
    assert.equal((await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd, otp: 123456 } })).json.error, 'invalid_request');

    // The confirmation used `step`: the next step's code is accepted (a fast clock), once.
    const next = codeAt(secret, step + 1);
    const signedIn = await passwordGrant(app, user.name, user.pwd, { otp: next, address: freshAddress() });
    assert.equal(signedIn.status, 200, signedIn.text);
    assert.equal(typeof signedIn.json.access_token, 'string');
    const replay = await passwordGrant(app, user.name, user.pwd, { otp: next, address: freshAddress() });
    assert.equal(replay.status, 400);
    assert.equal(replay.json.error, 'invalid_grant', 'a replay is refused');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: codeAt(secret, step), address: freshAddress() })).json.error, 'invalid_grant', 'an older step is refused');

    // 90 s later, the previous step's code (a slow clock) is accepted; one further back is not.
    app.clock.advance(90);
    await awayFromStepEnd();
    const now = stepNow();
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: codeAt(secret, now - 2), address: freshAddress() })).json.error, 'invalid_grant', 'two steps back is too old');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: codeAt(secret, now - 1), address: freshAddress() })).status, 200, 'the previous step');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: codeAt(secret, now), address: freshAddress() })).status, 200, 'the current step');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: codeAt(secret, now + 2), address: freshAddress() })).json.error, 'invalid_grant', 'two steps ahead is too far');
  });

  it('accepts each recovery code once, in any case and without hyphens, and tells the owner', async () => {
    const { user, token, recoveryCodes } = await withFactor();
    const address = freshAddress();
    const first = await passwordGrant(app, user.name, user.pwd, { otp: recoveryCodes[0], address });
    assert.equal(first.status, 200, first.text);
    const notice = await mailTo(user.email, 'A recovery code was used');
    assert.match(notice.text, /Recovery codes left: 9\./);
    assert.doesNotMatch(notice.text, /Only/);
    const again = await passwordGrant(app, user.name, user.pwd, { otp: recoveryCodes[0], address });
    assert.equal(again.json.error, 'invalid_grant', 'single use');
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: recoveryCodes[1]!.toUpperCase().replaceAll('-', ''), address: freshAddress() })).status, 200);
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: 'abcd-efgh-ijkl-mnop', address: freshAddress() })).json.error, 'invalid_grant', 'an unknown recovery code');
    assert.ok((await eventsOf(app, token)).some((event) => event.type === 'recovery-code-used'));

    // Few left: the notice says so.
    for (const code of recoveryCodes.slice(2, 7)) assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: code, address: freshAddress() })).status, 200);
    const few = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'A recovery code was used' && /Only 3 left\. Disable the second factor/.test(message.text));
    assert.match(few.text, /Recovery codes left: 3\./);
  });

  it('counts a wrong otp after a right password like a wrong password in the sign-in throttle', async () => {
    const { user, secret, step } = await withFactor();
    const address = freshAddress();
    const right = codeAt(secret, step + 1);
    const wrong = right === '000000' ? '000001' : '000000';
    for (let i = 0; i < 5; i += 1) assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: wrong, address })).json.error, 'invalid_grant');
    const throttled = await passwordGrant(app, user.name, user.pwd, { otp: right, address });
    assert.equal(throttled.status, 429, 'the sixth attempt from the address waits, whatever it holds');
    assert.ok(Number(throttled.headers['retry-after']) >= 1);
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: right, address: freshAddress() })).status, 200, 'another address is not held up, and the code was not used by the throttled attempt');
  });

  it('is not removed by a password reset', async () => {
    const { user, secret, step } = await withFactor();
    const before = app.smtp.messages.length;
    await app.call('POST', '/acc/pwd/code', { json: { email: user.email } });
    const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && message.to === user.email && app.smtp.messages.indexOf(message) >= before);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'reset-password' } })).status, 204);
    assert.equal((await passwordGrant(app, user.name, 'reset-password', { address: freshAddress() })).json.error, 'mfa_required', 'a mailbox alone does not open the account');
    assert.equal((await passwordGrant(app, user.name, 'reset-password', { otp: codeAt(secret, step + 1), address: freshAddress() })).status, 200);
  });

  it('lets exactly one of two racing sign-ins with the same code win', async () => {
    for (let round = 0; round < 3; round += 1) {
      const { user, secret, step } = await withFactor();
      const code = codeAt(secret, step + 1);
      const answers = await Promise.all([passwordGrant(app, user.name, user.pwd, { otp: code, address: freshAddress() }), passwordGrant(app, user.name, user.pwd, { otp: code, address: freshAddress() })]);
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 400], `round ${round}`);
      assert.equal(answers.find((answer) => answer.status === 400)!.json.error, 'invalid_grant');
    }
  });

  it('lets exactly one of two racing sign-ins with the same recovery code win', async () => {
    const { user, recoveryCodes } = await withFactor();
    const answers = await Promise.all([passwordGrant(app, user.name, user.pwd, { otp: recoveryCodes[0], address: freshAddress() }), passwordGrant(app, user.name, user.pwd, { otp: recoveryCodes[0], address: freshAddress() })]);
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 400]);
  });

  it('ignores otp for an account without a factor', async () => {
    const { user } = await registerAndSignIn(app);
    assert.equal((await passwordGrant(app, user.name, user.pwd, { otp: '123456', address: freshAddress() })).status, 200);
  });
});

describe('DELETE /acc/me/totp', () => {
  it('needs the password and an otp, then disables the factor, tells the owner and records it', async () => {
    const { user, token, secret, step } = await withFactor();
    for (const body of [{ pwd: user.pwd }, { otp: '123456' }, { pwd: user.pwd, otp: '12345' }]) {
      assert.equal((await app.call('DELETE', '/acc/me/totp', { token, json: body })).status, 400, JSON.stringify(body));
    }
    const right = codeAt(secret, step + 1);
    const wrongPassword = await app.call('DELETE', '/acc/me/totp', { token, json: { pwd: 'wrong-password', otp: right }, headers: from(freshAddress()) });
    assert.equal(wrongPassword.status, 403);
    assert.equal(wrongPassword.json.type, 'urn:account-service:problem:wrong-password');
    const wrongOtp = await app.call('DELETE', '/acc/me/totp', { token, json: { pwd: user.pwd, otp: right === '000000' ? '000001' : '000000' }, headers: from(freshAddress()) });
    assert.equal(wrongOtp.status, 403);
    assert.equal(wrongOtp.json.type, 'urn:account-service:problem:wrong-otp');

    const disabled = await app.call('DELETE', '/acc/me/totp', { token, json: { pwd: user.pwd, otp: right }, headers: from(freshAddress()) });
    assert.equal(disabled.status, 204, disabled.text);
    await mailTo(user.email, 'The second factor was disabled');
    assert.ok((await eventsOf(app, token)).some((event) => event.type === 'totp-disabled'));
    assert.equal((await app.call('GET', '/acc/me', { token })).json.totp_enabled, false);
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: freshAddress() })).status, 200, 'the password alone signs in again');
    const again = await app.call('DELETE', '/acc/me/totp', { token, json: { pwd: user.pwd, otp: right }, headers: from(freshAddress()) });
    assert.equal(again.status, 409);
    assert.equal(again.json.type, 'urn:account-service:problem:totp-not-active');
  });

  it('takes a recovery code as otp', async () => {
    const { user, token, recoveryCodes } = await withFactor();
    assert.equal((await app.call('DELETE', '/acc/me/totp', { token, json: { pwd: user.pwd, otp: recoveryCodes[9] } })).status, 204);
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM recovery_codes JOIN accounts ON accounts.id = account_id WHERE name = ${user.name}`;
    assert.equal(row!.n, 0, 'the recovery codes go with the factor');
  });
});

describe('DELETE /acc/me with a second factor', () => {
  it('needs otp as well', async () => {
    const { user, token, secret, step } = await withFactor();
    const [account] = await app.service.sql`SELECT id FROM accounts WHERE name = ${user.name}`;
    const missing = await app.call('DELETE', '/acc/me', { token, json: { pwd: user.pwd } });
    assert.equal(missing.status, 403);
    assert.equal(missing.json.type, 'urn:account-service:problem:otp-required');
    const right = codeAt(secret, step + 1);
    const wrong = await app.call('DELETE', '/acc/me', { token, json: { pwd: user.pwd, otp: right === '000000' ? '000001' : '000000' } });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-otp');
    assert.equal((await app.call('DELETE', '/acc/me', { token, json: { pwd: user.pwd, otp: 'bad' } })).status, 400);
    assert.equal((await deleteAccount(app, token, user, { otp: right })).status, 204);
    await mailTo(user.email, 'Your account was deleted');
    const [left] = await app.service.sql`
      SELECT (SELECT count(*) FROM second_factors WHERE account_id = ${account!.id})::int + (SELECT count(*) FROM recovery_codes WHERE account_id = ${account!.id})::int AS n`;
    assert.equal(left!.n, 0, 'the factor and its recovery codes went with the account');
  });
});

describe('changing the e-mail address with a second factor', () => {
  it('needs the otp as well, checked after the password: missing 403 otp-required, wrong 403 wrong-otp, right 204', async () => {
    const { user, token, secret, step } = await withFactor();
    const ask = (body: Record<string, unknown>) => app.call('POST', '/acc/me/email', { token, json: { pwd: user.pwd, email: `moved-${user.email}`, ...body }, headers: from(freshAddress()) });
    const missing = await ask({});
    assert.equal(missing.status, 403);
    assert.equal(missing.json.type, 'urn:account-service:problem:otp-required');
    const wrong = await ask({ otp: codeAt(secret, step + 5) });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.json.type, 'urn:account-service:problem:wrong-otp');
    const wrongPassword = await ask({ pwd: 'not-the-password', otp: codeAt(secret, step + 1) });
    assert.equal(wrongPassword.status, 403);
    assert.equal(wrongPassword.json.type, 'urn:account-service:problem:wrong-password', 'the password first: a wrong one says nothing of the factor');
    assert.equal((await ask({ otp: codeAt(secret, step + 1) })).status, 204);
    const code = codeIn(await mailTo(`moved-${user.email}`, 'Confirm your new e-mail address'));
    assert.equal((await app.call('POST', '/acc/email', { json: await emailChangeBody(app, code) })).status, 204);
    assert.equal((await app.call('GET', '/acc/me', { token })).json.email, `moved-${user.email}`);
  });
});
