import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRateLimiter } from '../src/rate-limit.ts';

describe('createRateLimiter', () => {
  it('allows `perMinute` at once, then tells how long to wait', () => {
    const limiter = createRateLimiter(3);
    assert.deepEqual([0, 0, 0].map(() => limiter.take('a', 0)), [0, 0, 0]);
    assert.equal(limiter.take('a', 0), 20, 'one request every 20 s refills');
    assert.equal(limiter.take('b', 0), 0, 'other keys have their own allowance');
  });

  it('refills evenly over a minute, never above the bound', () => {
    const limiter = createRateLimiter(60);
    for (let i = 0; i < 60; i += 1) limiter.take('a', 0);
    assert.equal(limiter.take('a', 500), 1);
    assert.equal(limiter.take('a', 1_000), 0);
    for (let i = 0; i < 60; i += 1) assert.equal(limiter.take('b', 3_600_000), 0);
    assert.ok(limiter.take('b', 3_600_000) > 0, 'a long pause does not bank more than the bound');
  });

  it('keeps at most `maxKeys` keys, forgetting the least recently used', () => {
    const limiter = createRateLimiter(1, 100);
    for (let i = 0; i < 10_000; i += 1) limiter.take(`10.0.${i >> 8}.${i & 255}`, 0);
    assert.equal(limiter.size(), 100);
    const fresh = createRateLimiter(1, 2);
    fresh.take('a', 0);
    fresh.take('b', 0);
    fresh.take('a', 0);
    fresh.take('c', 0);
    assert.ok(fresh.take('a', 0) > 0, 'a, used recently, is remembered');
    assert.equal(fresh.take('b', 0), 0, 'b, the least recently used, was forgotten');
  });
});
