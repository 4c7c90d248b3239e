import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateCode, hashCode } from '../../src/core/one-time-codes.ts';
import { patterns } from '../../src/core/fields.ts';

describe('one-time codes', () => {
  it('have the spec format, in upper case', () => {
    for (let i = 0; i < 200; i += 1) {
      const code = generateCode();
      assert.match(code, /^[A-Z]{4}-[A-Z]{4}-[A-Z]{4}-[A-Z]{4}$/);
      assert.equal(patterns.code.test(code), true);
    }
  });

  it('use every letter and do not repeat', () => {
    const codes = Array.from({ length: 2000 }, generateCode);
    assert.equal(new Set(codes).size, codes.length);
    const letters = new Set(codes.join('').replaceAll('-', ''));
    assert.equal(letters.size, 26);
  });

  it('hash to 32 bytes, the same for any letter case', () => {
    const hash = hashCode('ABCD-EFGH-IJKL-MNOP');
    assert.equal(hash.length, 32);
    assert.deepEqual(hashCode('abcd-efgh-ijkl-mnop'), hash);
    assert.notDeepEqual(hashCode('ABCD-EFGH-IJKL-MNOQ'), hash);
  });
});
