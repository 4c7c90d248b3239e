import { isIP } from 'node:net';

export type RateLimiter = {
  /** Takes one request from `key`'s allowance: 0 if allowed, else the seconds until one is. */
  take(key: string, nowMs: number): number;
  size(): number;
};

type Bucket = { tokens: number; updatedMs: number };

/**
 * A token bucket per key: `perMinute` requests at once, refilled evenly over a minute.
 * At most `maxKeys` buckets are kept; the least recently used goes first, so memory stays
 * bounded however many addresses call (at the price of forgetting the quietest ones). A
 * bucket untouched for a minute is full again, the same as none: each call also drops the
 * least recently used bucket if it is, so that the buckets of a burst go with later calls.
 */
export function createRateLimiter(perMinute: number, maxKeys = 10_000): RateLimiter {
  const buckets = new Map<string, Bucket>();
  const refillPerMs = perMinute / 60_000;
  return {
    take(key, nowMs) {
      const previous = buckets.get(key);
      const elapsed = previous === undefined ? 0 : Math.max(0, nowMs - previous.updatedMs);
      const tokens = previous === undefined ? perMinute : Math.min(perMinute, previous.tokens + elapsed * refillPerMs);
      // Re-inserting moves the key to the end of the Map's order, which is what makes it LRU.
      buckets.delete(key);
      const [oldestKey, oldest] = buckets.entries().next().value ?? [];
      const evict = oldestKey !== undefined && (buckets.size >= maxKeys || nowMs - oldest!.updatedMs >= 60_000);
      if (evict) buckets.delete(oldestKey);
      if (tokens >= 1) {
        buckets.set(key, { tokens: tokens - 1, updatedMs: nowMs });
        return 0;
      }
      buckets.set(key, { tokens, updatedMs: nowMs });
      return Math.max(1, Math.ceil((1 - tokens) / refillPerMs / 1000));
    },
    size: () => buckets.size,
  };
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
