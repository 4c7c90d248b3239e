import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { equalSecrets } from '../src/core/constant-time.ts';

describe('equalSecrets', () => {
  it('is true for the same bytes, given as buffers, strings or one of each', () => {
    assert.equal(equalSecrets(Buffer.from('a secret'), Buffer.from('a secret')), true);
    assert.equal(equalSecrets('a secret', 'a secret'), true);
    assert.equal(equalSecrets('a secret', Buffer.from('a secret')), true);
    assert.equal(equalSecrets('', ''), true);
  });

  it('is false for other bytes of the same length, and for another length, without throwing', () => {
    assert.equal(equalSecrets('a secret', 'a secreT'), false);
    assert.equal(equalSecrets(Buffer.from([0, 1]), Buffer.from([0, 2])), false);
    assert.equal(equalSecrets('a secret', 'a secret '), false);
    assert.equal(equalSecrets('', 'x'), false);
  });

  it('compares strings as their UTF-8 bytes', () => {
    assert.equal(equalSecrets('é', Buffer.from([0xc3, 0xa9])), true);
    assert.equal(equalSecrets('é', 'e\u0301'), false, 'no normalization');
  });
});
