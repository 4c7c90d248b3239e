import { checkClock } from './clock.ts';
import { endSessions, signIn, type Account, type CheckContext, type Session } from './context.ts';
import { checkEnumeration } from './enumeration.ts';
import { checkExposure } from './exposure.ts';
import { checkIssuer } from './issuer.ts';
import { createProbe, type ProbeOptions } from './probe.ts';
import { checkProxyWithAccount, spoofedAddress } from './proxy.ts';
import { fail, type Finding } from './report.ts';
import { checkRateLimit, checkSignInThrottle } from './throttle.ts';
import { checkTokens } from './tokens.ts';
import { checkTransport } from './transport.ts';

export type CheckOptions = {
  account: Account | null;
  expectPublicMetrics: boolean;
  probe?: ProbeOptions;
  /** Timed pairs per endpoint of the enumeration check (enumeration.ts, defaultSamples). */
  samples?: number;
};

/**
 * Runs every check against the deployment at `url`, in an order that keeps them apart: the
 * read-only checks first, then those of the operator's account (its sessions ended after), the
 * enumeration after them (it spends the rate limit their POSTs need), and the rate-limit burst
 * last, since it leaves this address limited for up to a minute.
 */
export async function runChecks(url: URL, options: CheckOptions): Promise<Finding[]> {
  const probe = createProbe(url, options.probe);
  const ctx: CheckContext = {
    url,
    probe,
    account: options.account,
    expectPublicMetrics: options.expectPublicMetrics,
    sessions: [],
  };
  const findings: Finding[] = [];
  try {
    findings.push(...(await checkTransport(ctx)), ...(await checkClock(ctx)));
    const spoofed = spoofedAddress();
    let session: Session | null = null;
    let local = '';
    let email: string | null = null;
    if (ctx.account !== null) {
      const signedIn = await signIn(ctx, ctx.account.password, { 'X-Forwarded-For': spoofed });
      if (typeof signedIn === 'number') {
        const change = signedIn === 429
          ? 'wait a minute: the rate limit counts the requests of the run before (or pass --account on the first)'
          : 'its password in CHECK_PASSWORD';
        return [...findings, fail('account', `signing in as ${ctx.account.name} answers ${signedIn}`, change)];
      }
      session = signedIn;
      const headers = { Authorization: `Bearer ${session.accessToken}` };
      email = String((await probe.request('GET', '/acc/me', { headers })).json?.email);
      local = (await probe.request('GET', '/healthz')).localAddress;
      findings.push(...(await checkProxyWithAccount(ctx, session, spoofed, local)));
    }
    findings.push(...(await checkIssuer(ctx, session)), ...(await checkExposure(ctx)));
    findings.push(...(await checkTokens(ctx, session)));
    if (session !== null) findings.push(await checkSignInThrottle(ctx));
    findings.push(...(await checkEnumeration(ctx, email, options.samples)));
    await endSessions(ctx);
    if (session === null) findings.push(...(await checkRateLimit(ctx)));
    return findings;
  } finally {
    await endSessions(ctx);
  }
}
