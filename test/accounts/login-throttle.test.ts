import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createKeyedHashes, deriveKeys } from '../../src/keyed-hashes.ts';
import { delaySeconds } from '../../src/accounts/login-throttle.ts';

describe('login throttle', () => {
  it('allows four failures, then doubles the wait from 1 s up to 15 minutes', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8].map(delaySeconds), [0, 0, 0, 0, 1, 2, 4, 8]);
    assert.equal(delaySeconds(14), 512);
    assert.equal(delaySeconds(15), 900);
    assert.equal(delaySeconds(1000), 900);
  });

  it('keys identifiers by a keyed hash of what was typed, ignoring case, with a key for each purpose', () => {
    const keys = createKeyedHashes(deriveKeys(Buffer.from('s'.repeat(32))));
    assert.equal(keys.loginIdentifier('Alice').length, 32);
    assert.deepEqual(keys.loginIdentifier('Alice'), keys.loginIdentifier('alice'));
    assert.notDeepEqual(keys.loginIdentifier('alice'), keys.address('alice'), 'another purpose, another key');
    assert.notDeepEqual(keys.loginIdentifier('alice'), createKeyedHashes(deriveKeys(Buffer.from('t'.repeat(32)))).loginIdentifier('alice'), 'another secret, another key');
    assert.equal(keys.client('192.0.2.1').toString('latin1').includes('192.0.2.1'), false);
  });
});
