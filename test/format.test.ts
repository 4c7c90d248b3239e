import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCount, isoUtc } from '../src/support/format.ts';

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

describe('isoUtc', () => {
  it('writes ISO 8601 in UTC, to the second', () => {
    assert.equal(isoUtc(new Date(Date.UTC(2026, 10, 21, 10, 30, 0, 999))), '2026-11-21T10:30:00Z');
  });
});
