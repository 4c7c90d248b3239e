import type { CheckContext } from './context.ts';
import { pass, warn, type Finding } from './report.ts';

/** TOTP steps are 30 s and tokens expire by the clock: a few seconds off already shows. */
const toleratedSkewSeconds = 5;

/** The deployment's Date header against this machine's clock. */
export async function checkClock(ctx: CheckContext): Promise<Finding[]> {
  const name = 'clock';
  const before = Date.now();
  const answer = await ctx.probe.request('GET', '/healthz');
  const date = Date.parse(answer.headers.date ?? '');
  if (Number.isNaN(date)) return [warn(name, 'no Date header', "let the proxy pass the service's Date header")];
  // Date has whole seconds: compare with the middle of the round trip, and allow that second.
  const local = (before + Date.now()) / 2;
  const skew = Math.round((date - local) / 1000);
  const saw = `the deployment's clock is ${Math.abs(skew)} s ${skew < 0 ? 'behind' : 'ahead of'} this machine's`;
  if (Math.abs(skew) > toleratedSkewSeconds) {
    return [
      warn(
        name,
        saw,
        'synchronise the clocks (NTP) of the service and of this machine; TOTP and expiry depend on them',
      ),
    ];
  }
  return [pass(name, saw)];
}
