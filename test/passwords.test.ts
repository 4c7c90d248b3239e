import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPasswordHasher, formatHash, parseHash } from '../src/passwords.ts';

const params = { ln: 4, r: 8, p: 1 };
const hasher = createPasswordHasher(params);

describe('passwords', () => {
  it('hashes into a PHC string with its parameters and a 16-byte salt', async () => {
    const hash = await hasher.hash('correct horse');
    assert.match(hash, /^\$scrypt\$ln=4,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    assert.notEqual(await hasher.hash('correct horse'), hash, 'salted');
  });

  it('verifies the right password and refuses others', async () => {
    const hash = await hasher.hash('correct horse');
    assert.equal(await hasher.verify('correct horse', hash), true);
    assert.equal(await hasher.verify('correct horsE', hash), false);
    assert.equal(await hasher.verify('', hash), false);
  });

  it('answers false for a missing account, after doing the work', async () => {
    assert.equal(await hasher.verify('anything', null), false);
  });

  it('treats canonically equivalent Unicode as the same password', async () => {
    const hash = await hasher.hash('caf\u00e9-pass');
    assert.equal(await hasher.verify('cafe\u0301-pass', hash), true);
  });

  it('verifies hashes made with other parameters and says they need a rehash', async () => {
    const old = await createPasswordHasher({ ln: 3, r: 4, p: 1 }).hash('secret-1');
    assert.equal(await hasher.verify('secret-1', old), true);
    assert.equal(hasher.needsRehash(old), true);
    assert.equal(hasher.needsRehash(await hasher.hash('secret-1')), false);
    assert.equal(hasher.needsRehash('garbage'), true);
  });

  it('refuses stored values that are not scrypt PHC strings', async () => {
    assert.equal(parseHash('$argon2id$v=19$m=65536,t=3,p=4$abc$def'), null);
    assert.equal(await hasher.verify('secret-1', 'not a hash'), false);
  });

  it('round-trips the PHC format', () => {
    const parsed = { params: { ln: 15, r: 8, p: 3 }, salt: Buffer.alloc(16, 1), hash: Buffer.alloc(32, 2) };
    assert.deepEqual(parseHash(formatHash(parsed)), parsed);
  });

  it('uses production parameters within the memory limit', async () => {
    const production = createPasswordHasher({ ln: 15, r: 8, p: 3 });
    const hash = await production.hash('production-check');
    assert.equal(await production.verify('production-check', hash), true);
  });
});
