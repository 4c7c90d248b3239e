import type { CheckContext } from './context.ts';
import type { Answer } from './probe.ts';
import { fail, pass, warn, type Finding } from './report.ts';

/** Half a year: the least max-age that HSTS preload lists and most audits accept. */
const minHstsSeconds = 15_768_000;
/** Headers that say what software runs in front; the service itself sends none of them. */
const softwareHeaders = ['server', 'x-powered-by', 'via', 'x-aspnet-version', 'x-generator'];

/** Transport and headers: HTTPS with HSTS, no-store on token answers, nosniff, and no versions told. */
export async function checkTransport(ctx: CheckContext): Promise<Finding[]> {
  const health = await ctx.probe.request('GET', '/healthz');
  // An unknown refresh token: a token answer that costs the deployment no password hash.
  const token = await ctx.probe.request('POST', '/auth/token', {
    form: { grant_type: 'refresh_token', refresh_token: 'check' },
  });
  return [
    checkHttps(ctx.url, health),
    checkNoStore(token),
    checkNosniff([health, token]),
    checkSoftwareHeaders(health),
  ];
}

function checkHttps(url: URL, answer: Answer): Finding {
  const name = 'transport.https';
  if (url.protocol !== 'https:') {
    return fail(
      name,
      `the URL is ${url.protocol.slice(0, -1)}: passwords and tokens cross the network in clear`,
      'serve the public URL over HTTPS only',
    );
  }
  const hsts = answer.headers['strict-transport-security'];
  if (hsts === undefined)
    return fail(
      name,
      'HTTPS, but no Strict-Transport-Security header',
      `add Strict-Transport-Security: max-age=${minHstsSeconds * 2} at the proxy`,
    );
  const maxAge = Number(/max-age=(\d+)/i.exec(hsts)?.[1] ?? 0);
  if (maxAge < minHstsSeconds)
    return warn(name, `HSTS max-age=${maxAge}`, `raise max-age to at least ${minHstsSeconds} (half a year)`);
  return pass(name, `HTTPS with Strict-Transport-Security: ${hsts}`);
}

function checkNoStore(token: Answer): Finding {
  const name = 'transport.no-store';
  const cacheControl = token.headers['cache-control'] ?? '';
  if (/\bno-store\b/.test(cacheControl)) return pass(name, `POST /auth/token answers Cache-Control: ${cacheControl}`);
  return fail(
    name,
    `POST /auth/token answers Cache-Control: ${cacheControl || '(none)'}`,
    "keep the service's Cache-Control: no-store; the proxy or a cache rewrites it",
  );
}

function checkNosniff(answers: Answer[]): Finding {
  const name = 'transport.nosniff';
  const missing = answers.filter((answer) => answer.headers['x-content-type-options'] !== 'nosniff');
  if (missing.length === 0) return pass(name, 'X-Content-Type-Options: nosniff on every answer looked at');
  return fail(
    name,
    `${missing.length} of ${answers.length} answers lack X-Content-Type-Options: nosniff`,
    "keep the service's header; the proxy drops or replaces it",
  );
}

function checkSoftwareHeaders(answer: Answer): Finding {
  const name = 'transport.server-header';
  const present = softwareHeaders
    .filter((header) => answer.headers[header] !== undefined)
    .map((header) => `${header}: ${answer.headers[header]}`);
  // A version number tells an attacker which published flaws to try first.
  const versioned = present.filter((line) => /\d+\.\d+/.test(line));
  if (versioned.length > 0)
    return warn(name, versioned.join('; '), 'hide versions at the proxy (nginx: server_tokens off)');
  if (present.length > 0) return pass(name, `no version told (${present.join('; ')}, added in front of the service)`);
  return pass(name, 'no Server, X-Powered-By or Via header');
}
