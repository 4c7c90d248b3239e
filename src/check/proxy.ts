import { randomInt } from 'node:crypto';
import { isIP } from 'node:net';
import type { CheckContext, Session } from './context.ts';
import { fail, pass, warn, type Finding } from './report.ts';

export const proxyCheck = 'proxy.client-address';

/** An address of TEST-NET-3 (RFC 5737): no real client has it, so seeing it back means it was believed. */
export function spoofedAddress(): string {
  return `203.0.113.${randomInt(1, 255)}`;
}

/** Loopback, private (RFC 1918, RFC 4193) and link-local addresses: a proxy's, seldom a client's public one. */
export function isInternal(address: string): boolean {
  const plain = address.replace(/^::ffff:/i, '');
  if (isIP(plain) === 4) return /^(127\.|10\.|192\.168\.|169\.254\.|172\.(1[6-9]|2\d|3[01])\.)/.test(plain);
  return plain === '::1' || /^f[cd]/i.test(plain) || /^fe80:/i.test(plain);
}

/** Judges the address the service reported for a request that carried `spoofed`. */
export function judgeAddress(reported: string, spoofed: string, local: string, source: string): Finding {
  if (reported === spoofed) {
    return fail(
      proxyCheck,
      `${source} gave ${reported}, the X-Forwarded-For this check made up: any client chooses its address`,
      'set TRUST_PROXY to the number of proxies in front (each must append to X-Forwarded-For)',
    );
  }
  if (reported === local)
    return pass(proxyCheck, `${source} gave ${reported}, this machine's own address, not the made-up ${spoofed}`);
  if (isInternal(reported)) {
    return warn(
      proxyCheck,
      `${source} gave ${reported}, not this machine (${local}): ` +
        'every client appears as the proxy, and one abuser throttles all',
      'set TRUST_PROXY to the number of proxies in front, and let each append to X-Forwarded-For',
    );
  }
  return pass(
    proxyCheck,
    `${source} gave ${reported}, not the made-up ${spoofed} (this machine's public address, behind a NAT?)`,
  );
}

/** With an account: the session list and the events name the address the service took for the sign-in. */
export async function checkProxyWithAccount(
  ctx: CheckContext,
  session: Session,
  spoofed: string,
  local: string,
): Promise<Finding[]> {
  const headers = { Authorization: `Bearer ${session.accessToken}` };
  const sessions = await ctx.probe.request('GET', '/acc/me/sessions', { headers });
  const list = Array.isArray(sessions.json?.sessions) ? (sessions.json.sessions as Record<string, unknown>[]) : [];
  const current = list.find((entry) => entry.current === true);
  if (current === undefined)
    return [
      fail(
        proxyCheck,
        `GET /acc/me/sessions answers ${sessions.status} without the current session`,
        'let the proxy pass /acc/me/ with its Authorization header',
      ),
    ];
  const events = await ctx.probe.request('GET', '/acc/me/events', { headers });
  const list2 = Array.isArray(events.json?.events) ? (events.json.events as Record<string, unknown>[]) : [];
  const signedIn = list2.find((event) => event.type === 'signed-in' && event.session_id === current.id);
  const fromSessions = judgeAddress(String(current.client_address), spoofed, local, 'the session list');
  if (signedIn === undefined || fromSessions.verdict === 'fail') return [fromSessions];
  const fromEvents = judgeAddress(String(signedIn.client_address), spoofed, local, 'the session list and the events');
  return [fromEvents.verdict === fromSessions.verdict ? fromEvents : fromSessions];
}
