import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * The client's address: the TCP peer, or with `trustedProxies` = n, the address that the
 * n-th proxy from us saw, read from the right of X-Forwarded-For. Entries further left are
 * written by the client itself and could be anything, so they are never used. A chain shorter
 * than n + 1 did not pass all the proxies (one was bypassed, or the service is reached
 * directly), so none of its header entries is known to be a proxy's: the TCP peer, the one
 * hop that nobody can write, is used.
 */
export function clientAddress(req: IncomingMessage, trustedProxies: number): string {
  const peer = req.socket.remoteAddress ?? 'unknown';
  if (trustedProxies === 0) return peer;
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  const chain = [...forwarded, peer];
  if (chain.length <= trustedProxies) return peer;
  const candidate = chain[chain.length - 1 - trustedProxies]!;
  // Only an IP address: the value goes into e-mails, logs and the session list, and a header
  // that a client wrote itself (a misconfigured TRUST_PROXY) could otherwise say anything.
  // No IPv6 zone id either: `fe80::1%anything` is an IP to isIP, and the part after % is free text.
  return isIP(candidate) === 0 || candidate.includes('%') ? peer : candidate;
}
