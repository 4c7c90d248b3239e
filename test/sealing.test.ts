import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSealer, sealedKeyId } from '../src/core/sealing.ts';

const first = { id: 'k1', key: Buffer.alloc(32, 1) };
const second = { id: 'k2', key: Buffer.alloc(32, 2) };
const text = (opened: { plaintext: Buffer } | null) => opened?.plaintext.toString('utf8') ?? null;

describe('sealing', () => {
  it('round-trips and hides the plaintext', () => {
    const sealer = createSealer([first]);
    const sealed = sealer.seal(Buffer.from('code ABCD-EFGH-IJKL-MNOP'), 'mail', '<m1>');
    assert.equal(sealed.toString('latin1').includes('ABCD'), false);
    assert.deepEqual(sealer.open(sealed, 'mail', '<m1>'), { plaintext: Buffer.from('code ABCD-EFGH-IJKL-MNOP'), current: true });
    assert.notDeepEqual(sealer.seal(Buffer.from('same'), 'mail', '<m1>'), sealer.seal(Buffer.from('same'), 'mail', '<m1>'), 'a fresh IV each time');
  });

  it('carries a version and the id of its key', () => {
    const sealed = createSealer([first]).seal(Buffer.from('x'), 'mail', '<m1>');
    assert.equal(sealed[0], 2);
    assert.equal(sealedKeyId(sealed), 'k1');
    assert.equal(sealedKeyId(Buffer.from([1, 2, 3])), null, 'another version');
  });

  it('does not open for another row, table or purpose', () => {
    const sealer = createSealer([first]);
    const sealed = sealer.seal(Buffer.from('totp secret'), 'totp-secret', '41');
    assert.equal(text(sealer.open(sealed, 'totp-secret', '41')), 'totp secret');
    assert.equal(sealer.open(sealed, 'totp-secret', '42'), null, 'another account');
    assert.equal(sealer.open(sealed, 'totp-secret', '4'), null, 'a prefix of the row');
    assert.equal(sealer.open(sealed, 'mail', '41'), null, 'another purpose');
  });

  it('opens with any configured key after a rotation, and says that the value needs sealing again', () => {
    const sealed = createSealer([first]).seal(Buffer.from('hello'), 'mail', '<m>');
    assert.deepEqual(createSealer([second, first]).open(sealed, 'mail', '<m>'), { plaintext: Buffer.from('hello'), current: false });
    assert.equal(createSealer([second]).open(sealed, 'mail', '<m>'), null, 'its key removed');
  });

  it('refuses tampered data, a changed key id, and a truncated tag', () => {
    const sealer = createSealer([first, { id: 'k3', key: first.key }]);
    const sealed = sealer.seal(Buffer.from('hello'), 'mail', '<m>');
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1]! ^= 1;
    assert.equal(sealer.open(flipped, 'mail', '<m>'), null, 'a flipped ciphertext bit');
    const renamed = Buffer.from(sealed);
    renamed.write('k3', 2, 'ascii');
    assert.equal(sealer.open(renamed, 'mail', '<m>'), null, 'the same key under another id: the header is authenticated');
    const header = 2 + 2;
    // Only the first 4 bytes of the tag, then the ciphertext: GCM accepts short tags unless told their length.
    const shortTag = Buffer.concat([sealed.subarray(0, header + 12 + 4), sealed.subarray(header + 12 + 16)]);
    assert.equal(sealer.open(shortTag, 'mail', '<m>'), null, 'a 4-byte tag');
    assert.equal(sealer.open(sealed.subarray(0, header + 12 + 15), 'mail', '<m>'), null, 'too short to hold a tag');
    assert.equal(sealer.open(Buffer.alloc(5), 'mail', '<m>'), null);
    assert.equal(sealer.open(Buffer.from([1, 0, 0]), 'mail', '<m>'), null, 'another version');
  });

  it('needs at least one key', () => {
    assert.throws(() => createSealer([]));
  });
});
