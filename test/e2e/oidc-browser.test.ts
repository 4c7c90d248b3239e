// Sign-in with a provider in a real browser: Chromium opens examples/oidc.html, which sends it
// to the service, the service to oidc-provider's own login and consent pages, and back through
// the service's callback to the page, which trades the code for tokens and says who signed in.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/ports.ts';
import { startRealProvider, type RealProvider } from '../helpers/oidc-real.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';
import { codeIn } from '../helpers/smtp.ts';

const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium-headless-shell';
const missing = `the provider browser test needs Chromium at ${chromium}: apt-get install -y chromium-headless-shell (or set CHROMIUM_PATH)`;
const page = readFileSync(new URL('../../examples/oidc.html', import.meta.url));
const skip = !existsSync(chromium) && process.env.CI === undefined ? missing : false;

describe('sign-in with a provider in a real browser (examples/oidc.html, oidc-provider\'s own pages)', { skip }, () => {
  let app: TestService;
  let provider: RealProvider;
  let pageServer: ReturnType<typeof createServer>;
  let pageOrigin: string;
  const accounts: Record<string, { email: string; email_verified: boolean }> = {};

  before(async () => {
    assert.ok(existsSync(chromium), missing);
    const pagePort = await freePort();
    pageOrigin = `http://localhost:${pagePort}`;
    pageServer = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(page));
    await new Promise<void>((resolve) => pageServer.listen(pagePort, '127.0.0.1', resolve));
    // The browser must reach the service's callback at TOKEN_ISSUER: the service's port is chosen first.
    const port = await freePort();
    const issuer = `http://localhost:${port}`;
    provider = await startRealProvider({ redirectUris: [`${issuer}/auth/oidc/corp/callback`], accounts });
    app = await startTestService({
      env: {
        PORT: String(port), TOKEN_ISSUER: issuer, CORS_ORIGINS: pageOrigin, OIDC_PROVIDERS: 'corp',
        OIDC_REDIRECT_URIS: `${pageOrigin}/`, OIDC_CORP_ISSUER: provider.issuer, OIDC_CORP_CLIENT_ID: provider.clientId,
        OIDC_CORP_CLIENT_SECRET: provider.clientSecret,
      },
    });
  });
  after(async () => {
    pageServer?.close();
    await app?.stop();
    await provider?.close();
  });

  it('signs in through the page and the provider\'s login page, and shows who signed in', async () => {
    const { user, token } = await registerAndSignIn(app);
    const sub = `browser-${process.pid}`;
    accounts[sub] = { email: user.email, email_verified: true };
    // The link, as an application makes it (oidc-real.test.ts drives it the same way).
    const verifier = randomBytes(32).toString('base64url');
    const options = await app.call('POST', '/acc/me/identities/options', {
      token,
      json: {
        provider: 'corp', pwd: user.pwd, redirect_uri: `${pageOrigin}/`, state: 'link',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      },
    });
    assert.equal(options.status, 200, options.text);
    const mail = await app.smtp.waitFor((m) => m.to === user.email && m.subject === 'Your code to link a sign-in provider');
    const callback = new URL(await provider.signIn(options.json.authorization_url, sub));
    const back = await app.call('GET', `${callback.pathname}${callback.search}`);
    const code = new URL(back.headers.location!).searchParams.get('code');
    const linked = await app.call('POST', '/acc/me/identities', {
      token, json: { code, code_verifier: verifier, redirect_uri: `${pageOrigin}/`, email_code: codeIn(mail) },
    });
    assert.equal(linked.status, 201, linked.text);

    const { chromium: launcher } = await import('playwright-core');
    const browser = await launcher.launch({
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const tab = await browser.newPage();
      await tab.goto(`${pageOrigin}/?api=${encodeURIComponent(app.url.replace('127.0.0.1', 'localhost'))}`);
      await tab.click('#start');
      // oidc-provider's own login page, then its consent page.
      await tab.waitForSelector('input[name=login]');
      await tab.fill('input[name=login]', sub);
      await tab.fill('input[name=password]', 'any');
      await tab.click('button[type=submit]');
      await tab.waitForSelector('button[type=submit]');
      await tab.click('button[type=submit]');
      await tab.waitForFunction("/Signed in as|not|refused|did not/.test(document.getElementById('status').textContent)", undefined, { timeout: 20_000 });
      assert.equal(await tab.textContent('#status'), `Signed in as ${user.name} (${user.email}).`);
      assert.equal(new URL(tab.url()).search, '', 'the code left the address bar');
    } finally {
      await browser.close();
    }
  });
});
