import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientNetwork, createRateLimiter } from '../src/http/rate-limit.ts';

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

  it('forgets a bucket once it has refilled, one with each later call', () => {
    const limiter = createRateLimiter(5);
    for (let i = 0; i < 1_000; i += 1) limiter.take(`10.0.${i >> 8}.${i & 255}`, 0);
    assert.equal(limiter.size(), 1_000);
    limiter.take('late', 59_999);
    assert.equal(limiter.size(), 1_001, 'not full yet: kept');
    for (let i = 0; i < 10; i += 1) limiter.take('late', 60_000);
    assert.equal(limiter.size(), 991, 'each call dropped one full bucket, and "late" stays');
    assert.ok(limiter.take('late', 60_000) > 0, 'the bucket in use keeps its count');
  });
});

describe('clientNetwork', () => {
  it('counts IPv4 addresses one by one', () => {
    assert.equal(clientNetwork('203.0.113.7'), '203.0.113.7');
    assert.notEqual(clientNetwork('203.0.113.7'), clientNetwork('203.0.113.8'));
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address', () => {
    assert.equal(clientNetwork('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientNetwork('::FFFF:203.0.113.7'), '203.0.113.7');
  });

  it('counts every IPv6 address of one /64 as one, however it is written', () => {
    const network = '2001:db8:1:2::/64';
    for (const address of ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:9', '2001:DB8:1:2:a::b', '2001:db8:1:2::192.0.2.1']) {
      assert.equal(clientNetwork(address), network, address);
    }
    assert.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientNetwork('::1'), '0:0:0:0::/64');
    assert.equal(clientNetwork('2001:db8:1::'), '2001:db8:1:0::/64');
  });

  it('keeps neighbouring /64s apart', () => {
    assert.notEqual(clientNetwork('2001:db8:1:2::1'), clientNetwork('2001:db8:1:3::1'));
  });

  it('leaves what is not an IP address alone', () => {
    assert.equal(clientNetwork('unknown'), 'unknown');
  });
});
