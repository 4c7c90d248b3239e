import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCount } from '../src/count.ts';

describe('formatCount', () => {
  it('puts the noun in the singular for one and in the plural otherwise', () => {
    assert.equal(formatCount(1, 'minute'), '1 minute');
    assert.equal(formatCount(2, 'minute'), '2 minutes');
    assert.equal(formatCount(0, 'second'), '0 seconds');
    assert.equal(formatCount(900, 'second'), '900 seconds');
  });

  it('takes an irregular plural', () => {
    assert.equal(formatCount(1, 'entry', 'entries'), '1 entry');
    assert.equal(formatCount(3, 'entry', 'entries'), '3 entries');
  });
});
