import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPasswordHasher, formatHash, parseHash, scryptWork, storedWork, wrappingParams, type Derive } from '../../src/core/passwords.ts';
import type { ScryptParams } from '../../src/config/config.ts';

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
    const parsed = { layers: [{ params: { ln: 15, r: 8, p: 3 }, salt: Buffer.alloc(16, 1) }], hash: Buffer.alloc(32, 2) };
    assert.deepEqual(parseHash(formatHash(parsed)), parsed);
    const wrapped = { layers: [...parsed.layers, { params: { ln: 4, r: 8, p: 2 }, salt: Buffer.alloc(16, 3) }], hash: Buffer.alloc(32, 4) };
    assert.deepEqual(parseHash(formatHash(wrapped)), wrapped);
    for (const bad of ['$scrypt$ln=4,r=8,p=1$c2FsdA', '$scrypt$ln=4,r=8$c2FsdA$aGFzaA', '$scrypt$ln=4,r=8,p=1$c2F$sdA$aGFzaA', '$scrypt$$$', 'x$scrypt$ln=4,r=8,p=1$c2FsdA$aGFzaA']) {
      assert.equal(parseHash(bad), null, bad);
    }
  });

  it('uses production parameters within the memory limit', async () => {
    const production = createPasswordHasher({ ln: 15, r: 8, p: 3 });
    const hash = await production.hash('production-check');
    assert.equal(await production.verify('production-check', hash), true);
  });

  describe('wrapping hashes made with older parameters', () => {
    /** A scrypt that records the work of every call, to compare paths without timing them. */
    function counting(): { derive: Derive; work: () => number } {
      let total = 0;
      return {
        derive: async (input, salt, params) => {
          total += scryptWork(params);
          const { scrypt } = await import('node:crypto');
          const secret = typeof input === 'string' ? input.normalize('NFC') : input;
          return new Promise((resolve, reject) => scrypt(secret, salt, 32, { N: 2 ** params.ln, r: params.r, p: params.p, maxmem: 2 ** 30 }, (error, key) => (error ? reject(error) : resolve(key))));
        },
        work: () => {
          const value = total;
          total = 0;
          return value;
        },
      };
    }

    it('wraps an outdated hash so that a wrong password costs what an unknown user costs', async () => {
      const current: ScryptParams = { ln: 10, r: 8, p: 2 };
      const meter = counting();
      const oldHasher = createPasswordHasher({ ln: 6, r: 8, p: 1 }, meter.derive);
      const hasher = createPasswordHasher(current, meter.derive);
      const old = await oldHasher.hash('secret-1');
      meter.work();

      await hasher.verify('wrong-password', null);
      const unknownUser = meter.work();
      await hasher.verify('wrong-password', old);
      assert.ok(meter.work() < unknownUser / 4, 'before wrapping, the old hash is much cheaper: the flaw');

      const wrapped = await hasher.wrap(old);
      assert.ok(wrapped !== null);
      assert.equal(parseHash(wrapped)!.layers.length, 2);
      // ln=6 leaves 15.5 blocks of r=8 at ln=10 to make up: the outer layer keeps N (see wrappingParams) and overshoots by 3 %.
      assert.deepEqual(parseHash(wrapped)!.layers[1]!.params, { ln: 10, r: 8, p: 2 });
      assert.ok(Math.abs(storedWork(wrapped)! - scryptWork(current)) <= scryptWork(current) * 0.05, 'the layers add up to the current cost, within 5 %');
      meter.work();
      assert.equal(await hasher.verify('wrong-password', wrapped), false);
      assert.equal(meter.work(), storedWork(wrapped), 'a wrong password on a wrapped hash costs the work of its layers');
      assert.ok(Math.abs(storedWork(wrapped)! - unknownUser) <= unknownUser * 0.05, 'which is that of an unknown user, within 5 %');
      assert.equal(await hasher.verify('secret-1', wrapped), true, 'the owner still signs in');
      assert.equal(hasher.needsRehash(wrapped), true, 'and is then given a plain current hash');
      assert.equal(await hasher.wrap(wrapped), null, 'a wrapped hash is not wrapped again');
    });

    it('wraps again after a second parameter change, and leaves stronger or current hashes alone', async () => {
      const first = createPasswordHasher({ ln: 8, r: 8, p: 1 });
      const second = createPasswordHasher({ ln: 9, r: 8, p: 1 });
      const third = createPasswordHasher({ ln: 11, r: 8, p: 1 });
      const wrappedOnce = (await second.wrap(await first.hash('secret-2')))!;
      const wrappedTwice = (await third.wrap(wrappedOnce))!;
      assert.equal(parseHash(wrappedTwice)!.layers.length, 3);
      assert.equal(storedWork(wrappedTwice), scryptWork({ ln: 11, r: 8, p: 1 }));
      assert.equal(await third.verify('secret-2', wrappedTwice), true);
      assert.equal(await third.wrap(await third.hash('x-secret')), null, 'current');
      assert.equal(await first.wrap(await third.hash('x-secret')), null, 'stronger than the current parameters');
      assert.equal(await third.wrap('garbage'), null);
    });

    it('picks outer parameters that make up the missing work at the current N, with r at most the current one', () => {
      const target = { ln: 15, r: 8, p: 3 };
      for (const inner of [{ ln: 4, r: 8, p: 1 }, { ln: 14, r: 8, p: 3 }, { ln: 15, r: 8, p: 1 }, { ln: 12, r: 4, p: 2 }, { ln: 14, r: 8, p: 5 }, { ln: 13, r: 8, p: 3 }]) {
        const outer = wrappingParams(scryptWork(inner), target)!;
        const total = scryptWork(inner) + scryptWork(outer);
        assert.ok(Math.abs(total - scryptWork(target)) <= scryptWork(target) * 0.05, `${JSON.stringify(inner)} + ${JSON.stringify(outer)}`);
        assert.equal(outer.ln, target.ln, JSON.stringify(outer));
        assert.ok(outer.r <= target.r, JSON.stringify(outer));
      }
      // The one-step downgrade of the README: half the work is missing, made up at ln=15 with r=6, p=2.
      assert.deepEqual(wrappingParams(scryptWork({ ln: 14, r: 8, p: 3 }), target), { ln: 15, r: 6, p: 2 });
      assert.equal(wrappingParams(scryptWork(target), target), null);
      assert.equal(wrappingParams(scryptWork(target) * 2, target), null);
    });
  });
});
