import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createKeyedHashes } from '../../src/keyed-hashes.ts';
import { delaySeconds } from '../../src/accounts/login-throttle.ts';

describe('login throttle', () => {
  it('allows four failures, then doubles the wait from 1 s up to 15 minutes', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8].map(delaySeconds), [0, 0, 0, 0, 1, 2, 4, 8]);
    assert.equal(delaySeconds(14), 512);
    assert.equal(delaySeconds(15), 900);
    assert.equal(delaySeconds(1000), 900);
  });

  it('keys identifiers by a keyed hash of what was typed, ignoring case, with a key for each purpose', () => {
    const keysOf = (byte: number) => ({ address: Buffer.alloc(32, byte), loginIdentifier: Buffer.alloc(32, byte + 1), client: Buffer.alloc(32, byte + 2) });
    const keys = createKeyedHashes(keysOf(1));
    assert.equal(keys.loginIdentifier('Alice').length, 32);
    assert.deepEqual(keys.loginIdentifier('Alice'), keys.loginIdentifier('alice'));
    assert.notDeepEqual(keys.loginIdentifier('alice'), keys.address('alice'), 'another purpose, another key');
    assert.notDeepEqual(keys.loginIdentifier('alice'), createKeyedHashes(keysOf(7)).loginIdentifier('alice'), 'another key, another hash');
    assert.equal(keys.client('192.0.2.1').toString('latin1').includes('192.0.2.1'), false);
  });
});
