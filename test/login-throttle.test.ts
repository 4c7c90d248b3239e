import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { delaySeconds, throttleKey } from '../src/login-throttle.ts';

describe('login throttle', () => {
  it('allows four failures, then doubles the wait from 1 s up to 15 minutes', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8].map(delaySeconds), [0, 0, 0, 0, 1, 2, 4, 8]);
    assert.equal(delaySeconds(14), 512);
    assert.equal(delaySeconds(15), 900);
    assert.equal(delaySeconds(1000), 900);
  });

  it('counts on the account when there is one, else on a hash of the lower-cased name', () => {
    assert.equal(throttleKey('42', 'alice'), 'account:42');
    assert.match(throttleKey(null, 'Nobody'), /^name:[0-9a-f]{64}$/);
    assert.equal(throttleKey(null, 'Nobody'), throttleKey(null, 'nobody'));
    assert.equal(throttleKey(null, 'Nobody').includes('obody'), false);
  });
});
