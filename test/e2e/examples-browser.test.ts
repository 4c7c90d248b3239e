// examples/account.html in Chromium, flow by flow, against the whole service over HTTP with a real
// SMTP server: registration and activation, sign-in with and without the second factor, who is
// signed in and where, activity, the second factor, password change and reset, e-mail change,
// signing out everywhere and deletion; what went wrong said in words, a CORS refusal included;
// and a feature that is off hidden.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/ports.ts';
import { codeIn, type ReceivedMail } from '../helpers/smtp.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { totpStepOf } from '../helpers/accounts.ts';

const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium-headless-shell';
const missing = `the example client test needs Chromium at ${chromium}: apt-get install -y chromium-headless-shell (or set CHROMIUM_PATH)`;
const skip = !existsSync(chromium) && process.env.CI === undefined ? missing : false;
const page = readFileSync(new URL('../../examples/account.html', import.meta.url));
/** Set to a directory to keep a screenshot of each step, for a person to look at. */
const shots = process.env.EXAMPLE_SCREENSHOTS;

describe('examples/account.html in Chromium, flow by flow', { skip }, () => {
  let app: TestService;
  let plain: TestService;
  let pageServer: ReturnType<typeof createServer>;
  let pageOrigin: string;
  let browser: Awaited<ReturnType<typeof import('playwright-core')['chromium']['launch']>>;

  before(async () => {
    const port = await freePort();
    pageOrigin = `http://localhost:${port}`;
    pageServer = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(page));
    await new Promise<void>((resolve) => pageServer.listen(port, '127.0.0.1', resolve));
    const every = 'second-factor,passkeys,email-change,common-passwords,sign-in-notices,export,email-code';
    app = await startTestService({ env: { CORS_ORIGINS: pageOrigin, FEATURES: every } });
    plain = await startTestService({ env: { CORS_ORIGINS: pageOrigin, FEATURES: '' } });
    const { chromium: launcher } = await import('playwright-core');
    browser = await launcher.launch({
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  after(async () => {
    await browser?.close();
    pageServer?.close();
    await app?.stop();
    await plain?.stop();
  });

  const apiOf = (service: TestService) => service.url.replace('127.0.0.1', 'localhost');
  async function open(service: TestService) {
    const tab = await browser.newPage();
    await tab.goto(`${pageOrigin}/?api=${encodeURIComponent(apiOf(service))}`);
    await tab.waitForFunction("document.readyState === 'complete'");
    return tab;
  }
  type Tab = Awaited<ReturnType<typeof open>>;
  /** Submits, then waits for the status line to say something new, and returns it. */
  async function act(tab: Tab, button: string, shot?: string): Promise<string> {
    await tab.evaluate("document.getElementById('status').textContent = ''");
    await tab.click(button);
    await tab.waitForFunction("document.getElementById('status').textContent !== ''");
    if (shots !== undefined && shot !== undefined) await tab.screenshot({ path: `${shots}/${shot}.png`, fullPage: true });
    return (await tab.textContent('#status'))!;
  }
  const mailTo = (address: string, subject: string, after = 0): Promise<ReceivedMail> =>
    app.smtp.waitFor((mail) => mail.to === address && mail.subject === subject && app.smtp.messages.indexOf(mail) >= after);
  /** Registers and activates an account through the page's forms. */
  async function registerInPage(tab: Tab, prefix: string) {
    const user = uniqueUser(prefix);
    await tab.fill('#reg-name', user.name);
    await tab.fill('#reg-email', user.email);
    await tab.fill('#reg-pwd', user.pwd);
    await act(tab, '#register button');
    await tab.fill('#reg-code', codeIn(await mailTo(user.email, 'Your registration code')));
    await act(tab, '#activate button');
    return user;
  }
  const otpNow = (secret: string) => {
    app.clock.advance(30);
    return referenceTotp(secret, totpStepOf(app) * 30);
  };

  it('registers, activates, signs in, shows who and where, activity, the second factor, and signs in with it', async () => {
    const tab = await open(app);
    const user = uniqueUser('page');
    await tab.fill('#reg-name', user.name);
    await tab.fill('#reg-email', user.email);
    await tab.fill('#reg-pwd', user.pwd);
    assert.match(await act(tab, '#register button', '1-registered'), /A code is on its way to/);
    await tab.fill('#reg-code', codeIn(await mailTo(user.email, 'Your registration code')));
    assert.match(await act(tab, '#activate button'), /The account is active/);
    await tab.fill('#pwd', 'not-the-password');
    assert.equal(await act(tab, '#sign-in button', '2-wrong-password'), 'The username or password is incorrect.');
    await tab.fill('#pwd', user.pwd);
    assert.equal(await act(tab, '#sign-in button', '3-signed-in'), 'You are signed in.');
    assert.equal(await tab.textContent('#who'), `Signed in as ${user.name} (${user.email})`);
    assert.match((await tab.textContent('#sessions'))!, /^This one: since /);
    assert.match(await act(tab, '#show-events'), /events, the newest first/);
    assert.match((await tab.textContent('#events'))!, /Signed in from 127\.0\.0\.1/, 'in words, not the type');

    const before = app.smtp.messages.length;
    await tab.fill('#totp-pwd', user.pwd);
    assert.match(await act(tab, '#totp-start button'), /Add the key to your authenticator app/);
    const secret = (await tab.textContent('#totp-secret'))!;
    await tab.fill('#totp-code', referenceTotp(secret, totpStepOf(app) * 30));
    await tab.fill('#totp-email', codeIn(await mailTo(user.email, 'Your code to enable a second factor', before)));
    assert.match(await act(tab, '#totp-confirm button', '4-second-factor'), /The second factor is on/);
    assert.equal((await tab.textContent('#recovery-codes'))!.split('\n').length, 10);

    assert.equal(await act(tab, '#sign-out'), 'You are signed out.');
    assert.equal(await tab.isVisible('#signed-in'), false);
    await tab.fill('#user', user.email);
    await tab.fill('#pwd', user.pwd);
    assert.match(await act(tab, '#sign-in button', '5-second-factor-asked'), /Your account has a second factor/);
    await tab.fill('#otp', otpNow(secret));
    assert.equal(await act(tab, '#sign-in button'), 'You are signed in.');
    assert.match((await tab.textContent('#who'))!, /with a second factor$/);
    await tab.close();
  });

  it('changes the password, the address, resets, signs out everywhere and deletes, saying each in words', async () => {
    const tab = await open(app);
    const user = await registerInPage(tab, 'flows');
    await tab.fill('#pwd', user.pwd);
    assert.equal(await act(tab, '#sign-in button'), 'You are signed in.');

    await tab.fill('#old-pwd', user.pwd);
    await tab.fill('#new-pwd', 'a-second-password');
    assert.match(await act(tab, '#change-pwd button'), /The password is changed/);
    await tab.fill('#pwd', 'a-second-password');
    assert.equal(await act(tab, '#sign-in button'), 'You are signed in.');

    const moved = `${user.name}@example.org`;
    const before = app.smtp.messages.length;
    await tab.fill('#email-new', moved);
    await tab.fill('#email-pwd', 'a-second-password');
    assert.match(await act(tab, '#email-start button'), /A code is on its way to the new address/);
    await tab.fill('#email-code-new', codeIn(await mailTo(moved, 'Confirm your new e-mail address', before)));
    await tab.fill('#email-code-current', codeIn(await mailTo(user.email, 'A change of your e-mail address was asked for', before)));
    assert.equal(await act(tab, '#email-confirm button', '6-new-address'), 'The account has its new address now.');
    assert.equal(await tab.textContent('#who'), `Signed in as ${user.name} (${moved})`);

    assert.match(await act(tab, '#sign-out-everywhere'), /Every session of the account was signed out/);
    await tab.fill('#reset-email', moved);
    assert.match(await act(tab, '#reset-code button'), /a reset code is on its way/);
    await tab.fill('#reset-code-input', codeIn(await mailTo(moved, 'Your password reset code')));
    await tab.fill('#reset-pwd', 'a-third-password');
    assert.match(await act(tab, '#reset button'), /The password is set/);
    await tab.fill('#user', user.name);
    await tab.fill('#pwd', 'a-third-password');
    assert.equal(await act(tab, '#sign-in button'), 'You are signed in.');

    await tab.fill('#delete-pwd', 'a-third-password');
    assert.match(await act(tab, '#delete-start button'), /A code that deletes the account is on its way/);
    await tab.fill('#delete-code', codeIn(await mailTo(moved, 'Your code to delete your account')));
    assert.equal(await act(tab, '#delete-confirm button', '7-deleted'), 'The account and everything of it are deleted.');
    await tab.fill('#pwd', 'a-third-password');
    assert.equal(await act(tab, '#sign-in button'), 'The username or password is incorrect.');
    // A field the service refuses is said in words, not as a regular expression.
    await tab.fill('#reg-name', 'Not A Name');
    await tab.fill('#reg-email', 'x@example.com');
    await tab.fill('#reg-pwd', 'short');
    assert.match(await act(tab, '#register button'), /The name must be 2 to 32 lower-case letters, digits or hyphens; The password must be 6 to 32 characters/);
    await tab.close();
  });

  it('signs in with a mailed code, turns the sign-in notices off and on, and downloads the account\'s data', async () => {
    const tab = await open(app);
    const user = await registerInPage(tab, 'more');
    await tab.fill('#code-email', user.email);
    assert.match(await act(tab, '#code-request button'), /a sign-in code is on its way/);
    await tab.fill('#code-input', codeIn(await mailTo(user.email, 'Your sign-in code')));
    assert.equal(await act(tab, '#code-sign-in button', '8-code-sign-in'), 'You are signed in.');
    await mailTo(user.email, 'A new sign-in to your account');

    await tab.waitForFunction("document.getElementById('notices-state').textContent !== ''");
    assert.match((await tab.textContent('#notices-state'))!, /is mailed to you/);
    await tab.fill('#notices-pwd', user.pwd);
    assert.match(await act(tab, '#notices button'), /Sign-in notices are off/);
    assert.equal(await tab.textContent('#notices-toggle'), 'Turn them on');
    await tab.fill('#notices-pwd', user.pwd);
    assert.equal(await act(tab, '#notices button'), 'Sign-in notices are on.');

    await tab.fill('#export-pwd', user.pwd);
    const download = tab.waitForEvent('download');
    assert.match(await act(tab, '#export button', '9-export'), /Your data is downloaded as account-export\.json: 1 sessions/);
    assert.equal((await download).suggestedFilename(), 'account-export.json');
    await mailTo(user.email, 'A copy of your account\'s data was taken');
    await tab.close();
  });

  it('says a CORS refusal in words, and hides what the operator turned off', async () => {
    const tab = await browser.newPage();
    // Another origin than the one the service allows: the browser refuses the answer.
    await tab.goto(`${pageOrigin.replace('localhost', '127.0.0.1')}/?api=${encodeURIComponent(apiOf(app))}`);
    await tab.waitForFunction("document.getElementById('status').textContent !== ''");
    assert.match((await tab.textContent('#status'))!, /did not answer\. Is it running there, and is this page's origin \(http:\/\/127\.0\.0\.1:\d+\) in its CORS_ORIGINS\?/);
    await tab.close();
    const off = await open(plain);
    for (const id of ['#delete-otp', '#email-otp']) assert.equal(await off.isVisible(id), false, `${id}: no second factor to ask for`);
    for (const path of ['/acc/me/totp', '/acc/me/passkeys', '/acc/me/email', '/acc/me/notices', '/acc/me/export', '/auth/code']) {
      await off.waitForFunction(`document.querySelector('[data-path="${path}"]').hidden`);
    }
    const on = await open(app);
    assert.equal(await on.evaluate("document.querySelector('[data-path=\"/acc/me/totp\"]').hidden"), false);
    await off.close();
    await on.close();
  });
});
