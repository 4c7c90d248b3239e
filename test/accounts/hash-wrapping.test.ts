import assert from 'node:assert/strict';
import { scrypt } from 'node:crypto';
import { describe, it } from 'node:test';
import { wrapOutdatedHashes } from '../../src/core/hash-wrapping.ts';
import { createPasswordHasher, parseHash, scryptWork, storedWork, type Derive, type PasswordHasher } from '../../src/core/passwords.ts';
import { connectDatabase } from '../../src/storage/db.ts';
import { passwordGrant } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { registerAndSignIn, startTestService } from '../helpers/service.ts';
import { waitUntil } from '../helpers/wait.ts';

/** Real scrypt that adds up the work N·r·p of every call, to compare paths without timing them. */
function meteredScrypt(): { derive: Derive; take(): number } {
  let work = 0;
  return {
    derive: (input, salt, params) => {
      work += scryptWork(params);
      const secret = typeof input === 'string' ? input.normalize('NFC') : input;
      return new Promise((resolve, reject) => scrypt(secret, salt, 32, { N: 2 ** params.ln, r: params.r, p: params.p, maxmem: 2 ** 28 }, (error, key) => (error ? reject(error) : resolve(key))));
    },
    take() {
      const taken = work;
      work = 0;
      return taken;
    },
  };
}

describe('wrapping outdated password hashes at start-up', () => {
  it('makes a wrong password on an old hash cost what an unknown user costs, over real HTTP', async () => {
    const database = await createTestDatabase();
    // ln=7 leaves 12 blocks of r=8 at ln=8 to make up: an exact fit at the current N (r=6, p=2).
    const before = await startTestService({ databaseUrl: database.url, env: { SCRYPT_PARAMS: 'ln=7,r=8,p=1' } });
    const { user } = await registerAndSignIn(before);
    await before.stop();

    const current = { ln: 8, r: 8, p: 2 };
    const meter = meteredScrypt();
    const after = await startTestService({ databaseUrl: database.url, env: { SCRYPT_PARAMS: 'ln=8,r=8,p=2' }, passwords: createPasswordHasher(current, meter.derive) });
    try {
      const storedHash = async () => ((await after.service.sql`SELECT password_hash FROM accounts WHERE name = ${user.name}`)[0]!.password_hash as string);
      await waitUntil(async () => parseHash(await storedHash())!.layers.length === 2);
      // The line follows the commit that the stored hash shows, a moment later.
      await waitUntil(async () => after.logs.some((line) => line.includes('"msg":"wrapped outdated password hashes to the current scrypt cost","wrapped":1')));
      assert.equal(storedWork(await storedHash()), scryptWork(current));

      const signIn = (username: string, password: string) => passwordGrant(after, username, password);
      meter.take();
      const unknown = await signIn('nobody-at-all', 'wrong-password');
      const unknownWork = meter.take();
      const wrong = await signIn(user.name, 'wrong-password');
      assert.equal(meter.take(), unknownWork, 'the same scrypt work');
      assert.deepEqual([wrong.status, wrong.text], [unknown.status, unknown.text], 'the same answer');

      assert.equal((await signIn(user.name, user.pwd)).status, 200, 'the owner signs in through the wrapped hash');
      assert.match(await storedHash(), /^\$scrypt\$ln=8,r=8,p=2\$[^$]+\$[^$]+$/, 'and the chain becomes a plain current hash');
    } finally {
      await after.stop();
      await database.drop();
    }
  });

  it('counts hashes that cost more than the current parameters, and leaves them as they are', async () => {
    const database = await createTestDatabase();
    const strong = await startTestService({ databaseUrl: database.url, env: { SCRYPT_PARAMS: 'ln=8,r=8,p=1' } });
    await registerAndSignIn(strong);
    await strong.stop();
    const weak = await startTestService({ databaseUrl: database.url, env: { SCRYPT_PARAMS: 'ln=4,r=8,p=1' } });
    try {
      await waitUntil(async () => weak.logs.some((line) => line.includes('password hashes cost more than SCRYPT_PARAMS')));
      const [row] = await weak.service.sql`SELECT password_hash FROM accounts LIMIT 1`;
      assert.equal(parseHash(row!.password_hash as string)!.layers.length, 1);
    } finally {
      await weak.stop();
      await database.drop();
    }
  });

  it('runs on one instance at a time: a second instance that starts meanwhile leaves the hashes to the first', async () => {
    const database = await createTestDatabase();
    const old = await startTestService({ databaseUrl: database.url, env: { SCRYPT_PARAMS: 'ln=7,r=8,p=1' } });
    await registerAndSignIn(old);
    await registerAndSignIn(old);
    await old.stop();
    // Two instances: a pool each, as two processes would have.
    const [first, second] = [connectDatabase(database.url), connectDatabase(database.url)];
    const current = { ln: 8, r: 8, p: 2 };
    const real = createPasswordHasher(current);
    let wrapping!: () => void;
    const firstIsWrapping = new Promise<void>((resolve) => (wrapping = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The first instance is held inside its first wrap until the second has finished.
    const held: PasswordHasher = { ...real, wrap: async (stored) => (wrapping(), await released, real.wrap(stored)) };
    let secondWraps = 0;
    const counted: PasswordHasher = { ...real, wrap: (stored) => ((secondWraps += 1), real.wrap(stored)) };
    const firstResult = wrapOutdatedHashes(first, held, current);
    try {
      await firstIsWrapping;
      assert.equal(await wrapOutdatedHashes(second, counted, current), null, 'another instance is wrapping');
      assert.equal(secondWraps, 0, 'the second instance wrapped nothing');
      release();
      assert.deepEqual(await firstResult, { wrapped: 2, unwrappable: 0 });
      const rows = await second`SELECT password_hash FROM accounts`;
      assert.deepEqual(rows.map((row) => parseHash(row.password_hash as string)!.layers.length), [2, 2], 'each hash wrapped once');
      // Once the first is done, its lock is free: the next start finds nothing left to wrap.
      assert.deepEqual(await wrapOutdatedHashes(second, counted, current), { wrapped: 0, unwrappable: 0 });
    } finally {
      release();
      await firstResult.catch(() => {});
      await Promise.all([first.end(), second.end()]);
      await database.drop();
    }
  });

  it('lets a sign-in whose own hash is wrapped between its check and its session start succeed', async () => {
    const database = await createTestDatabase();
    const old = await startTestService({ databaseUrl: database.url, env: { SCRYPT_PARAMS: 'ln=7,r=8,p=1' } });
    const { user } = await registerAndSignIn(old);
    const [row] = await old.service.sql`SELECT password_hash FROM accounts WHERE name = ${user.name}`;
    const oldHash = row!.password_hash as string;
    await old.stop();

    const real = createPasswordHasher({ ln: 8, r: 8, p: 2 });
    const storedHash = async () => ((await after.service.sql`SELECT password_hash FROM accounts WHERE name = ${user.name}`)[0]!.password_hash as string);
    let checked!: () => void;
    const signInChecked = new Promise<void>((resolve) => (checked = resolve));
    // The start-up wrapping waits for the sign-in's check of the old hash; the sign-in goes on
    // once the wrapped hash is stored: the race, every time.
    const racing: PasswordHasher = {
      ...real,
      async verify(password, stored, whenSlotGranted) {
        const valid = await real.verify(password, stored, whenSlotGranted);
        if (valid && stored === oldHash) {
          checked();
          await waitUntil(async () => (await storedHash()) !== oldHash);
        }
        return valid;
      },
      wrap: async (stored) => (await signInChecked, real.wrap(stored)),
    };
    const after = await startTestService({ databaseUrl: database.url, env: { SCRYPT_PARAMS: 'ln=8,r=8,p=2' }, passwords: racing });
    try {
      const answer = await passwordGrant(after, user.name, user.pwd);
      assert.equal(answer.status, 200, `the right password signs in: ${answer.text}`);
      assert.match(await storedHash(), /^\$scrypt\$ln=8,r=8,p=2\$[^$]+\$[^$]+$/, 'and the hash becomes a plain current one');
      const wrong = await passwordGrant(after, user.name, 'wrong-password');
      assert.equal(wrong.status, 400, 'a wrong password is still refused');
    } finally {
      await after.stop();
      await database.drop();
    }
  });
});
