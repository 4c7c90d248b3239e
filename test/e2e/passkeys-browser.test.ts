import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/ports.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';
import { codeIn } from '../helpers/smtp.ts';

// Debian's chromium-headless-shell (apt-get install chromium-headless-shell), driven by playwright-core.
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium-headless-shell';
const missing = `the passkey browser test needs Chromium at ${chromium}: apt-get install -y chromium-headless-shell (or set CHROMIUM_PATH)`;
const page = readFileSync(new URL('../../examples/passkeys.html', import.meta.url));

// In CI the browser test must run: a missing browser fails it. Elsewhere it is skipped, loudly.
if (!existsSync(chromium) && process.env.CI === undefined) {
  process.stderr.write(`\n!!!!!!!!!!\n!!! SKIPPED: ${missing}\n!!!!!!!!!!\n\n`);
}

describe('passkeys in a real browser (examples/passkeys.html, DevTools virtual authenticator)', { skip: !existsSync(chromium) && process.env.CI === undefined ? missing : false }, () => {
  let app: TestService;
  let pageServer: ReturnType<typeof createServer>;
  let pageOrigin: string;
  before(async () => {
    assert.ok(existsSync(chromium), missing);
    const port = await freePort();
    pageOrigin = `http://localhost:${port}`;
    pageServer = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(page));
    await new Promise<void>((resolve) => pageServer.listen(port, '127.0.0.1', resolve));
    app = await startTestService({ env: { WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGINS: pageOrigin, CORS_ORIGINS: pageOrigin } });
  });
  after(async () => {
    pageServer?.close();
    await app?.stop();
  });

  it('registers a passkey and signs in with it, usernameless, twice', async () => {
    const { chromium: launcher } = await import('playwright-core');
    const browser = await launcher.launch({
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const { user } = await registerAndSignIn(app);
      const tab = await browser.newPage();
      const devtools = await tab.context().newCDPSession(tab);
      await devtools.send('WebAuthn.enable');
      await devtools.send('WebAuthn.addVirtualAuthenticator', {
        options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
      });
      const apiUrl = app.url.replace('127.0.0.1', 'localhost');
      await tab.goto(`${pageOrigin}/?api=${encodeURIComponent(apiUrl)}`);
      await tab.fill('#username', user.name);
      await tab.fill('#password', user.pwd);
      await tab.click('#start');
      await tab.waitForFunction("document.getElementById('out').textContent.length > 0");
      const mail = await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'Your code to add a passkey');
      await tab.fill('#code', codeIn(mail));
      await tab.click('#add');
      await tab.waitForFunction("/Added|went wrong/.test(document.getElementById('out').textContent)");
      assert.match(await tab.textContent('#out') ?? '', /^Added the passkey "Example page"/, 'the passkey was added, in words');
      for (const round of [1, 2]) {
        await tab.click('#signin');
        await tab.waitForFunction(`(document.getElementById('out').textContent.match(/Signed in with a passkey|went wrong/g) ?? []).length >= ${round}`);
        assert.match(await tab.textContent('#out') ?? '', /^Signed in with a passkey: a Bearer token/, `sign-in ${round}`);
      }
    } finally {
      await browser.close();
    }
  });
});
