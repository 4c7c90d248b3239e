export type RateLimiter = {
  /** Takes one request from `key`'s allowance: 0 if allowed, else the seconds until one is. */
  take(key: string, nowMs: number): number;
  size(): number;
};

type Bucket = { tokens: number; updatedMs: number };

/**
 * A token bucket per key: `perMinute` requests at once, refilled evenly over a minute.
 * At most `maxKeys` buckets are kept; the least recently used goes first, so memory stays
 * bounded however many addresses call (at the price of forgetting the quietest ones).
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
      if (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value!);
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
