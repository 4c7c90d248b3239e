import { randomBytes } from 'node:crypto';
import { signIn, type CheckContext } from './context.ts';
import { proxyCheck, spoofedAddress } from './proxy.ts';
import { fail, pass, warn, type Finding } from './report.ts';
import type { Answer } from './probe.ts';

/** At most this many requests in the rate-limit burst: three times the default RATE_LIMIT of 20. */
const maxBurst = 60;
/** Wrong passwords tried at most; the sign-in throttle starts waiting after five. */
const maxWrongPasswords = 8;
/** The throttle's first waits are 1 s and 2 s: after this, the owner may try again. */
const ownerWaitMs = 2_000;

/** An unauthenticated POST that the limit counts and that costs the service nothing else. */
function cheapPost(ctx: CheckContext, headers: Record<string, string> = {}): Promise<Answer> {
  return ctx.probe.request('POST', '/auth/revoke', { form: { token: 'check' }, headers });
}

async function burst(
  ctx: CheckContext,
  headers: () => Record<string, string>,
): Promise<{ sent: number; limited: Answer | null }> {
  for (let sent = 1; sent <= maxBurst; sent += 1) {
    const answer = await cheapPost(ctx, headers());
    if (answer.status === 429) return { sent, limited: answer };
  }
  return { sent: maxBurst, limited: null };
}

/**
 * Without an account: each request of a burst carries another made-up X-Forwarded-For. If the
 * burst is limited anyway, the limit counts an address the client cannot choose; if not, the
 * same burst without the header tells whether the header chose the bucket.
 */
export async function checkRateLimit(ctx: CheckContext): Promise<Finding[]> {
  const spoofed = await burst(ctx, () => ({ 'X-Forwarded-For': spoofedAddress() }));
  const expires = (answer: Answer) => 'the limit counts requests a minute, in memory, per instance; this client may ' +
    `try again in ${answer.headers['retry-after'] ?? '?'} s (Retry-After)`;
  if (spoofed.limited !== null) {
    const retryAfter = spoofed.limited.headers['retry-after'];
    const limit =
      retryAfter === undefined
        ? fail(
            'throttle.rate-limit',
            `429 after ${spoofed.sent} requests, without Retry-After`,
            "let the proxy pass the service's Retry-After header",
          )
        : pass(
            'throttle.rate-limit',
            `429 with Retry-After after ${spoofed.sent} requests; ${expires(spoofed.limited)}`,
          );
    return [
      limit,
      pass(
        proxyCheck,
        'made-up X-Forwarded-For addresses did not escape the limit ' +
          '(with --account the check also sees whether all clients share one address)',
      ),
    ];
  }
  const plain = await burst(ctx, () => ({}));
  if (plain.limited !== null) {
    return [
      pass('throttle.rate-limit', `429 after ${plain.sent} requests; ${expires(plain.limited)}`),
      fail(
        proxyCheck,
        `${maxBurst} requests with made-up X-Forwarded-For addresses were never limited, the same without it were`,
        'set TRUST_PROXY to the number of proxies in front (each must append to X-Forwarded-For)',
      ),
    ];
  }
  return [
    warn(
      'throttle.rate-limit',
      `${maxBurst * 2} unauthenticated POSTs in ${Math.ceil((maxBurst * 2) / 10)} s or more, none limited`,
      `set RATE_LIMIT (20 by default, at most ${maxBurst - 1} for this check to see it)`,
    ),
    warn(proxyCheck, 'could not tell: the rate limit never answered', 'run again with --account'),
  ];
}

/** With an account: a few wrong passwords are throttled, and the owner's password works afterwards. */
export async function checkSignInThrottle(ctx: CheckContext): Promise<Finding> {
  const name = 'throttle.sign-in';
  const wrong = `check-${randomBytes(9).toString('base64url')}`;
  let throttled: number | null = null;
  for (let tried = 1; tried <= maxWrongPasswords && throttled === null; tried += 1) {
    const status = await signIn(ctx, wrong);
    if (status === 429) throttled = tried;
  }
  if (throttled === null)
    return fail(
      name,
      `${maxWrongPasswords} wrong passwords in a row, none throttled`,
      'keep the sign-in throttle; check that the proxy passes 429',
    );
  await new Promise((resolve) => setTimeout(resolve, ownerWaitMs));
  // A right password forgets this network's failures: the check leaves no counter behind.
  const owner = await signIn(ctx, ctx.account!.password);
  if (typeof owner === 'number')
    return fail(
      name,
      `throttled after ${throttled} wrong passwords, but the right one then answers ${owner}`,
      'the owner must be able to sign in from a known network',
    );
  return pass(
    name,
    `throttled at wrong password ${throttled}; the right password works afterwards and clears the counter`,
  );
}
