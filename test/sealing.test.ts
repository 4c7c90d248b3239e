import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSealer } from '../src/sealing.ts';

const first = Buffer.from('a'.repeat(32));
const second = Buffer.from('b'.repeat(32));

describe('sealing', () => {
  it('round-trips and hides the plaintext', () => {
    const sealer = createSealer([first]);
    const sealed = sealer.seal('code ABCD-EFGH-IJKL-MNOP');
    assert.equal(sealed.toString('latin1').includes('ABCD'), false);
    assert.equal(sealer.open(sealed), 'code ABCD-EFGH-IJKL-MNOP');
    assert.notDeepEqual(sealer.seal('same'), sealer.seal('same'), 'a fresh IV each time');
  });

  it('opens with any configured secret after rotation', () => {
    const sealed = createSealer([first]).seal('hello');
    assert.equal(createSealer([second, first]).open(sealed), 'hello');
    assert.equal(createSealer([second]).open(sealed), null);
  });

  it('refuses tampered or truncated data', () => {
    const sealer = createSealer([first]);
    const sealed = sealer.seal('hello');
    sealed[sealed.length - 1]! ^= 1;
    assert.equal(sealer.open(sealed), null);
    assert.equal(sealer.open(Buffer.alloc(5)), null);
  });

  it('needs at least one secret', () => {
    assert.throws(() => createSealer([]));
  });
});
