import { randomBytes } from 'node:crypto';
import type { CheckContext } from './context.ts';
import { fail, pass, warn, type Finding } from './report.ts';

/** Paths an admin API would use; none may answer on the public URL. */
const adminPaths = ['/admin', '/admin/accounts', '/acc/admin'];

/** Exposure: /metrics and /openapi.json, CORS for arbitrary origins, and no admin API in public. */
export async function checkExposure(ctx: CheckContext): Promise<Finding[]> {
  return [await checkMetrics(ctx), await checkOpenApi(ctx), await checkCors(ctx), await checkAdmin(ctx)];
}

async function checkMetrics(ctx: CheckContext): Promise<Finding> {
  const name = 'exposure.metrics';
  const answer = await ctx.probe.request('GET', '/metrics');
  if (answer.status === 200 && ctx.expectPublicMetrics)
    return pass(name, '/metrics is public, as --expect-public-metrics says');
  if (answer.status === 200) {
    return fail(
      name,
      '/metrics answers anyone: request counts and event counters of this deployment',
      'set METRICS_TOKEN (or block /metrics at the proxy), or pass --expect-public-metrics if intended',
    );
  }
  if (ctx.expectPublicMetrics)
    return warn(
      name,
      `/metrics answers ${answer.status}, though --expect-public-metrics`,
      'drop the flag, or unset METRICS_TOKEN',
    );
  return pass(name, `/metrics answers ${answer.status} without the token`);
}

async function checkOpenApi(ctx: CheckContext): Promise<Finding> {
  const answer = await ctx.probe.request('GET', '/openapi.json');
  // The document describes the public API and nothing of the deployment: public by design.
  return pass(
    'exposure.openapi',
    answer.status === 200
      ? '/openapi.json is public (by design: it lists only the API)'
      : `/openapi.json answers ${answer.status}`,
  );
}

async function checkCors(ctx: CheckContext): Promise<Finding> {
  const name = 'exposure.cors';
  const origin = `https://check-${randomBytes(6).toString('hex')}.example`;
  const preflight = await ctx.probe.request('OPTIONS', '/acc/me', {
    headers: { Origin: origin, 'Access-Control-Request-Method': 'GET' },
  });
  const simple = await ctx.probe.request('GET', '/healthz', { headers: { Origin: origin } });
  const allowed = [preflight, simple]
    .map((answer) => answer.headers['access-control-allow-origin'])
    .filter((value) => value !== undefined);
  if (allowed.length > 0) {
    return fail(
      name,
      `an unknown origin ${origin} is allowed (Access-Control-Allow-Origin: ${allowed[0]})`,
      'list exact origins in CORS_ORIGINS, and add no CORS headers at the proxy',
    );
  }
  return pass(name, 'an unknown origin gets no Access-Control-Allow-Origin');
}

async function checkAdmin(ctx: CheckContext): Promise<Finding> {
  const name = 'exposure.admin';
  const reachable: string[] = [];
  for (const path of adminPaths) {
    const answer = await ctx.probe.request('GET', path);
    if (answer.status !== 404) reachable.push(`${path} answers ${answer.status}`);
  }
  if (reachable.length === 0) return pass(name, `no admin path answers (${adminPaths.join(', ')}: 404)`);
  return fail(
    name,
    reachable.join('; '),
    'serve the admin API on an internal address only, and block it at the proxy',
  );
}
