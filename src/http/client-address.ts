import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * The client's address: the TCP peer, or with `trustedProxies` = n, the address that the
 * n-th proxy from us saw, read from the right of X-Forwarded-For. Entries further left are
 * written by the client itself and could be anything, so they are never used.
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
  const candidate = chain[Math.max(0, chain.length - 1 - trustedProxies)]!;
  // Only an IP address: the value goes into e-mails, logs and the session list, and a header
  // that a client wrote itself (a misconfigured TRUST_PROXY) could otherwise say anything.
  // No IPv6 zone id either: `fe80::1%anything` is an IP to isIP, and the part after % is free text.
  return isIP(candidate) === 0 || candidate.includes('%') ? peer : candidate;
}

/**
 * What the per-client limits count under: an IPv4 address as it is, an IPv6 address by its /64.
 * One subscriber, data centre host or VPN exit usually gets a whole /64 and can use any of its
 * 2^64 addresses, so counting full IPv6 addresses would hand it a free supply of fresh buckets.
 * An IPv4-mapped address (`::ffff:1.2.3.4`, a dual-stack socket's IPv4 peer) counts as its IPv4.
 */
export function clientNetwork(address: string): string {
  if (isIP(address) !== 6) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const [head = '', tail] = address.split('::');
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  // A dotted IPv4 tail (`64:ff9b::1.2.3.4`) fills two groups; only the first four matter here.
  const width = (parts: string[]) => parts.reduce((sum, part) => sum + (part.includes('.') ? 2 : 1), 0);
  const zeros = Array<string>(8 - width(before) - width(after)).fill('0');
  const prefix = [...before, ...zeros, ...after].slice(0, 4).map((group) => parseInt(group, 16).toString(16));
  return `${prefix.join(':')}::/64`;
}
