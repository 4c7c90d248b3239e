import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { liveSigningKeys, signingKeyLeadMs } from '../../src/core/signing-keys.ts';

const now = new Date('2026-11-21T10:00:00Z');
const ttlSeconds = 900;
/** A stored key made `ageMs` before now. */
const storedKey = (kid: string, ageMs: number) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, privateKey, publicKey, createdAt: new Date(now.getTime() - ageMs), jwk: { kid } };
};
/** The kids of the live keys, and the one that may sign (the only one that carries its private key). */
const summary = (keys: ReturnType<typeof liveSigningKeys>) => ({
  live: keys.map((key) => key.kid),
  signer: keys.filter((key) => key.privateKey !== null).map((key) => key.kid),
});

describe('the live signing keys', () => {
  it('signs with the newest key whose time has come; a newer one verifies, and signs only from its time', () => {
    const old = storedKey('old', 3_600_000);
    const rotated = storedKey('rotated', signingKeyLeadMs - 10_000);
    assert.deepEqual(summary(liveSigningKeys([rotated, old], now, ttlSeconds)), { live: ['old', 'rotated'], signer: ['old'] });
    const ready = storedKey('ready', signingKeyLeadMs);
    assert.deepEqual(summary(liveSigningKeys([ready, old], now, ttlSeconds)), { live: ['ready', 'old'], signer: ['ready'] });
  });

  it('lets no key sign before its time, even when it is the only key left', () => {
    const rotated = storedKey('rotated', 10_000);
    assert.deepEqual(summary(liveSigningKeys([rotated], now, ttlSeconds)), { live: ['rotated'], signer: [] });
  });
});
