// The deployment check (src/check/) against the service behind a real nginx, in the setups
// issue 34 names: configured well, a wrong TRUST_PROXY either way, public metrics, a wrong
// issuer, a passkey RP ID of another site. Each setup is caught by the check meant for it, and
// the good one passes all. (enumeration.test.ts shows the enumeration check failing on leaks.)
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { runChecks, type CheckOptions } from '../../src/check/run.ts';
import type { Finding } from '../../src/check/report.ts';
import { findNginx, PortTakenError, startNginx, type Nginx } from '../helpers/nginx.ts';
import { freePort } from '../helpers/ports.ts';
import { runNode } from '../helpers/process.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';

const nginx = findNginx();
if (nginx === null) {
  const message = 'nginx is missing: the deployment check is NOT tested (apt-get install nginx)';
  // CI installs it (.ci/run): there a missing nginx is a broken run, not a skipped test.
  if (process.env.CI !== undefined) throw new Error(message);
  process.stderr.write(`\n!!! ${message} !!!\n\n`);
}

type Deployment = { url: string; app: TestService; proxy: Nginx; account: { name: string; password: string } };
const metricsToken = 'metrics-token-of-the-check-test';

/**
 * The service on a fresh database behind nginx with TLS, passkeys on for its URL, with an
 * activated account. The port is chosen before the service starts (its URL is in the service's
 * settings); another process can take it before nginx binds it, and then all starts again on
 * a new port. `env` may be written from the port.
 */
async function deploy(env: Record<string, string> | ((port: number) => Record<string, string>)): Promise<Deployment> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const app = await startTestService({
      env: {
        ...{ TOKEN_ALG: 'ES256', TOKEN_ISSUER: url, TRUST_PROXY: '1', RATE_LIMIT: '40' },
        // The config takes an IP address as RP ID; browsers would not, but the check only compares.
        ...{ WEBAUTHN_RP_ID: '127.0.0.1', WEBAUTHN_ORIGINS: url, ...(typeof env === 'function' ? env(port) : env) },
      },
    });
    const proxy = await startNginx(nginx!, app.url, port).catch(async (error: unknown) => {
      await app.stop();
      if (error instanceof PortTakenError && attempt < 5) return null;
      throw error;
    });
    if (proxy === null) continue;
    const { user } = await registerAndSignIn(app);
    return { url, app, proxy, account: { name: user.name, password: user.pwd } };
  }
}

function checkFindings(deployment: Deployment, options: Partial<CheckOptions> = {}): Promise<Finding[]> {
  return runChecks(new URL(deployment.url), {
    account: deployment.account,
    expectPublicMetrics: false,
    probe: { ca: deployment.proxy.ca, minIntervalMs: 5 },
    // Too few to judge the timing (skipped, saying so), but the answers are compared: the good setup times it.
    samples: 4,
    ...options,
  });
}

async function check(deployment: Deployment, options: Partial<CheckOptions> = {}): Promise<Record<string, string>> {
  return verdicts(await checkFindings(deployment, options));
}

const verdicts = (findings: Finding[]) =>
  Object.fromEntries(findings.map((finding) => [finding.check, finding.verdict]));
/**
 * Every verdict but the named ones is pass, or skip: the timing of 4 samples, and the answers,
 * which the check compares on every endpoint or passes on none. Each deployment registers its
 * account a moment before the check, so the address's registration cooldown leaves
 * /acc/reg/code uncompared (the first test looks at what the answers check says then).
 */
function assertOthersPass(
  found: Record<string, string>, except: string[], skipped = ['enumeration.answers', 'enumeration.timing'],
): void {
  const others = Object.entries(found).filter(([check, verdict]) => !except.includes(check) && verdict !== 'pass');
  assert.deepEqual(others, skipped.map((check) => [check, 'skip']), 'every other check passes');
}

describe('check, against nginx in front of the service', { skip: nginx === null }, () => {
  const running: Deployment[] = [];
  const setup = async (env: Parameters<typeof deploy>[0]) => {
    const deployment = await deploy(env);
    running.push(deployment);
    return deployment;
  };
  after(async () => {
    for (const deployment of running) await deployment.proxy.stop().then(() => deployment.app.stop());
  });

  it('passes a deployment configured well, with --account and without', async () => {
    const good = await setup({ METRICS_TOKEN: metricsToken });
    const findings = await checkFindings(good, { samples: undefined }); // the default number of samples
    const withAccount = verdicts(findings);
    assertOthersPass(withAccount, [], ['enumeration.answers']);
    const answers = findings.find((finding) => finding.check === 'enumeration.answers')!;
    assert.match(answers.saw, /^\/acc\/pwd\/code: the same status, headers and body shape .*; \/acc\/reg\/code not compared: a code was asked for the account's address/);
    const timing = findings.find((finding) => finding.check === 'enumeration.timing')!;
    // Two sides of about a dozen (RATE_LIMIT and the cooldown allow that many): AUC and p for each endpoint.
    assert.match(timing.saw, /\/acc\/reg\/code: AUC [01]\.\d\d, p = .*\/acc\/pwd\/code: AUC/);
    for (const name of ['proxy.client-address', 'throttle.sign-in', 'tokens.reuse', 'issuer.token', 'issuer.passkeys'])
      assert.equal(withAccount[name], 'pass', name);
    const without = await check(good, { account: null });
    assert.equal(without['enumeration.answers'], 'skip', 'the enumeration needs an address with an account');
    assert.equal(without['throttle.rate-limit'], 'pass', 'the burst is limited, with Retry-After');
    assert.equal(without['proxy.client-address'], 'pass', 'made-up addresses share the limit');
    assert.equal(without['tokens.reuse'], 'skip', 'reuse needs an account');
  });

  it('fails TRUST_PROXY=2 behind one proxy: the client chooses its address', async () => {
    const spoofable = await setup({ METRICS_TOKEN: metricsToken, TRUST_PROXY: '2' });
    const withAccount = await check(spoofable);
    assert.equal(withAccount['proxy.client-address'], 'fail', 'the session list shows the made-up address');
    assertOthersPass(withAccount, ['proxy.client-address']);
    const without = await check(spoofable, { account: null });
    assert.equal(without['proxy.client-address'], 'fail', 'made-up addresses escape the rate limit');
  });

  it('warns on TRUST_PROXY=0 behind a proxy: every client appears as the proxy', async () => {
    const passkeysOff = { WEBAUTHN_RP_ID: '', WEBAUTHN_ORIGINS: '' };
    const shared = await setup({ METRICS_TOKEN: metricsToken, TRUST_PROXY: '0', ...passkeysOff });
    const found = await check(shared);
    assert.equal(found['proxy.client-address'], 'warn');
    assert.equal(found['issuer.passkeys'], 'skip', 'passkeys are off');
    assert.equal(found['issuer.passkey-origins'], 'skip', 'passkeys are off');
    assertOthersPass(found, ['proxy.client-address', 'issuer.passkeys', 'issuer.passkey-origins']);
  });

  it('fails public metrics, unless --expect-public-metrics says they are meant to be', async () => {
    const open = await setup({});
    const found = await check(open);
    assert.equal(found['exposure.metrics'], 'fail');
    assertOthersPass(found, ['exposure.metrics']);
    // Within the address's cooldown: no first answer to compare, and no time to wait for one.
    assert.equal((await check(open, { expectPublicMetrics: true, samples: 0 }))['exposure.metrics'], 'pass');
  });

  it("fails a passkey RP ID that is not the URL's host or a parent domain of it", async () => {
    const passkeys = { WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://accounts.example.com' };
    const elsewhere = await setup({ METRICS_TOKEN: metricsToken, ...passkeys });
    const found = await check(elsewhere);
    assert.equal(found['issuer.passkeys'], 'fail');
    assertOthersPass(found, ['issuer.passkeys']);
  });

  it('fails passkey origins written http:// for an https:// site (the proxy ends TLS)', async () => {
    // The origin is written from the port the proxy will listen on.
    const plain = await setup((port) => ({ METRICS_TOKEN: metricsToken, WEBAUTHN_ORIGINS: `http://127.0.0.1:${port}` }));
    const found = await check(plain);
    assert.equal(found['issuer.passkey-origins'], 'fail');
    assertOthersPass(found, ['issuer.passkey-origins']);
  });

  it('fails an issuer that is not the public URL, and exits 1 from the command line', async () => {
    const wrong = await setup({ METRICS_TOKEN: metricsToken, TOKEN_ISSUER: 'https://accounts.example.com' });
    const found = await check(wrong);
    assert.equal(found['issuer.metadata'], 'fail', 'the metadata names another issuer');
    assert.equal(found['issuer.token'], 'fail', 'the tokens carry another issuer');
    assertOthersPass(found, ['issuer.metadata', 'issuer.token']);
    const root = new URL('../..', import.meta.url).pathname;
    const cert = new URL('tls-cert.pem', import.meta.url).pathname;
    const run = await runNode(['--import', 'tsx', 'src/main.ts', 'check', wrong.url, '--json'], root, {
      NODE_EXTRA_CA_CERTS: cert,
    });
    assert.equal(run.code, 1, `exit code 1 on a fail: ${run.stderr}`);
    const report = JSON.parse(run.stdout) as { findings: Finding[] };
    assert.equal(verdicts(report.findings)['issuer.metadata'], 'fail', 'the JSON says the same');
  });
});
