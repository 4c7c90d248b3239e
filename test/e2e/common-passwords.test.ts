import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { commonPasswordsFile, readCommonPasswords } from '../../src/features/common-passwords/screen.ts';
import { passwordGrant } from '../helpers/accounts.ts';
import { codeIn } from '../helpers/smtp.ts';
import { registerAndSignIn, requestCode, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

/**
 * Common and breached passwords are refused at registration, change and reset alike, after the
 * spec's pattern and before anything else; the breached check asks a range server of the test's
 * own with five hex digits only, and lets the password through when that server fails.
 */
const sha1 = (text: string) => createHash('sha1').update(text, 'utf8').digest('hex').toUpperCase();
const breachedPassword = 'quilted-zebra-4417';
const paddedPassword = 'harbour-lantern-2291';

type Range = { server: Server; url: string; asked: Array<{ path: string; padding: string | undefined }>; mode: 'ok' | 'fail' | 'hang' };
async function startRangeServer(): Promise<Range> {
  const range: Range = { server: createServer(), url: '', asked: [], mode: 'ok' };
  range.server.on('request', (req, res) => {
    range.asked.push({ path: req.url ?? '', padding: req.headers['add-padding'] as string | undefined });
    if (range.mode === 'hang') return;
    if (range.mode === 'fail') return void res.writeHead(503).end();
    const prefix = (req.url ?? '').slice(-5);
    const lines = [breachedPassword, paddedPassword]
      .filter((password) => sha1(password).startsWith(prefix))
      .map((password) => `${sha1(password).slice(5)}:${password === paddedPassword ? 0 : 12}`);
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end([`${'0'.repeat(35)}:3`, ...lines].join('\r\n'));
  });
  await new Promise<void>((resolve) => range.server.listen(0, '127.0.0.1', resolve));
  range.url = `http://127.0.0.1:${(range.server.address() as AddressInfo).port}/range/`;
  return range;
}

let app: TestService;
let range: Range;
before(async () => {
  range = await startRangeServer();
  app = await startTestService({ env: { BREACHED_PASSWORDS_URL: range.url } });
});
after(async () => {
  await app.stop();
  range.server.closeAllConnections();
  range.server.close();
});

const commonReason = /is one of the most common passwords/;

describe('the shipped list', () => {
  it('holds at least 100,000 entries, and keeps those of 4 to 32 characters, lower-cased', async () => {
    const { readFile } = await import('node:fs/promises');
    const lines = (await readFile(commonPasswordsFile, 'utf8')).split('\n').filter((line) => line !== '');
    assert.ok(lines.length >= 100_000, `${lines.length} entries`);
    const common = readCommonPasswords();
    assert.ok(common.has('password1') && common.has('qwerty123') && common.has('iloveyou'));
    assert.ok(common.has('admin'), 'a word a disguise hides');
    assert.ok(!common.has('123'), 'shorter than four: not kept');
    assert.ok([...common].every((entry) => entry === entry.toLowerCase()));
  });
});

describe('common passwords', () => {
  it('are refused at registration, whatever their case, with the reason in words, and nothing is kept or mailed', async () => {
    for (const pwd of ['password1', 'PassWord1', 'iloveyou', ' password ', 'pass word1', '\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44', 'pass\u200bword']) {
      const user = { ...uniqueUser('common'), pwd };
      const before = app.smtp.messages.length;
      const response = await app.call('POST', '/acc/reg/code', { json: user });
      assert.equal(response.status, 400, pwd);
      assert.match(response.json.type as string, /invalid-fields$/);
      const [param] = response.json['invalid-params'] as Array<{ name: string; reason: string }>;
      assert.equal(param!.name, 'pwd');
      assert.match(param!.reason, commonReason);
      const [rows] = await app.service.sql`SELECT count(*)::int AS n FROM registration_requests`;
      assert.equal(rows!.n, 0, 'no request is recorded');
      assert.equal(app.smtp.messages.length, before);
    }
  });

  it('are refused under the commonest disguises, and a password that only shares a word with one is not', async () => {
    // The last three with letters of other scripts that pass for Latin: a Cyrillic Р and а, a Cyrillic е, a Greek Ι and Ν.
    const lookalikes = ['\u0420\u0430ssword1!', 'qw\u0435rty123', 'ADM\u0399\u039d123'];
    for (const pwd of ['Password123!', 'P@ssw0rd!', 'Pa$$w0rd!', 'Welcome1!', 'Summer2024!', 'Qwerty123!', 'Admin123!', 'Letmein1!', 'Monkey123!', ...lookalikes]) {
      const response = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser('disguised'), pwd } });
      assert.equal(response.status, 400, pwd);
      assert.match(response.text, commonReason, pwd);
    }
    for (const pwd of ['Sunflower-Meadow-42', 'password-of-mine-7', 'correct horse staple']) {
      await requestCode(app, { ...uniqueUser('fine'), pwd });
    }
  });

  it('are refused as the new password of a change, alike whether the old one is right, and the old one stays', async () => {
    const { user, token } = await registerAndSignIn(app);
    const right = await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: 'qwerty123' } });
    const wrong = await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: 'not-the-password', new_pwd: 'qwerty123' } });
    assert.equal(right.status, 400);
    assert.deepEqual(wrong.json, right.json, 'the answer tells nothing of the old password');
    assert.match(right.text, commonReason);
    assert.equal((await passwordGrant(app, user.name, user.pwd)).status, 200);
  });

  it('are refused by a reset without using its code up', async () => {
    const { user } = await registerAndSignIn(app);
    const before = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const mail = await app.smtp.waitFor((message) => message.subject === 'Your password reset code' && app.smtp.messages.indexOf(message) >= before);
    const refused = await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'football1' } });
    assert.equal(refused.status, 400);
    assert.match(refused.text, commonReason);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'a-far-rarer-phrase-9' } })).status, 204);
  });
});

describe('breached passwords (BREACHED_PASSWORDS_URL)', () => {
  it('refuses a password its range lists, sending five hex digits only and asking for padding', async () => {
    const asked = range.asked.length;
    const response = await app.call('POST', '/acc/reg/code', { json: { ...uniqueUser('breached'), pwd: breachedPassword } });
    assert.equal(response.status, 400);
    assert.match(response.text, /has appeared in a data breach/);
    const request = range.asked[asked]!;
    assert.equal(request.path, `/range/${sha1(breachedPassword).slice(0, 5)}`, 'the prefix alone leaves the service');
    assert.equal(request.padding, 'true');
    assert.ok(!app.logs.some((line) => line.includes(breachedPassword) || line.includes(sha1(breachedPassword).slice(5))));
  });

  it('accepts a password whose line is padding (count 0), and one the range does not list', async () => {
    for (const pwd of [paddedPassword, 'no-range-lists-this-7']) {
      await requestCode(app, { ...uniqueUser('fine'), pwd });
    }
  });

  it('lets the password through, and logs why, when the range server fails or does not answer in time', async () => {
    for (const mode of ['fail', 'hang'] as const) {
      range.mode = mode;
      const logged = app.logs.length;
      await requestCode(app, { ...uniqueUser(mode), pwd: breachedPassword });
      assert.ok(app.logs.slice(logged).some((line) => line.includes('the breached-password check was skipped')), mode);
    }
    range.mode = 'ok';
  });
});

describe('with common-passwords off', () => {
  it('accepts a common password and asks no range server', async () => {
    const off = await startTestService({ env: { FEATURES: 'second-factor', BREACHED_PASSWORDS_URL: range.url } });
    try {
      const asked = range.asked.length;
      const user = { ...uniqueUser('off'), pwd: 'password1' };
      await requestCode(off, user);
      assert.equal(range.asked.length, asked);
    } finally {
      await off.stop();
    }
  });
});
