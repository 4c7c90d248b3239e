import { findOutdatedHashes, upgradePasswordHash } from './accounts.ts';
import type { ScryptParams } from '../config/config.ts';
import type { Sql } from '../storage/db.ts';
import { scryptWork, storedWork, type PasswordHasher } from './passwords.ts';

export type WrapResult = { wrapped: number; unwrappable: number };

/** The first key of the wrapping's advisory lock; the second is the target cost's (wrapOutdatedHashes). */
const wrappingLockClass = 0x77726170; // "wrap"

/**
 * Wraps every stored hash made with other scrypt parameters in a layer that brings its cost
 * up to that of the current ones (PasswordHasher.wrap). Why: after SCRYPT_PARAMS changes, a
 * hash is upgraded only when its owner signs in, and until then a wrong password on a cheaper
 * hash would answer faster than an unknown name, telling which accounts exist. Runs once at
 * start-up, one hash at a time, so that it takes one hashing thread and never a request's slot.
 * A hash that costs more than the current parameters cannot be evened out and is counted.
 *
 * One instance at a time wraps toward one cost: the one that holds the session advisory lock of
 * that cost, on a connection it keeps for the whole pass. Another instance that starts meanwhile
 * answers null and leaves the work to it. Should that connection drop, the lock goes with it and
 * a second instance may wrap too: that repeats work and changes nothing else, since each update
 * applies only to the hash it wrapped (upgradePasswordHash). A sign-in whose hash is wrapped
 * between its check and its session start checks again (features/sessions/sign-in.ts).
 */
export async function wrapOutdatedHashes(
  sql: Sql,
  hasher: PasswordHasher,
  params: ScryptParams,
  stopped: () => boolean = () => false,
): Promise<WrapResult | null> {
  const currentPrefix = `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$`;
  // The common start, with every hash at the current parameters: nothing to wrap, no lock.
  if ((await findOutdatedHashes(sql, currentPrefix, '0', 1)).length === 0) return { wrapped: 0, unwrappable: 0 };
  const lock = await sql.reserve();
  try {
    const [row] = await lock`SELECT pg_try_advisory_lock(${wrappingLockClass}, hashtext(${currentPrefix})) AS locked`;
    if (row!.locked !== true) return null;
    try {
      return await wrapEach(sql, hasher, params, currentPrefix, stopped);
    } finally {
      await lock`SELECT pg_advisory_unlock(${wrappingLockClass}, hashtext(${currentPrefix}))`;
    }
  } finally {
    lock.release();
  }
}

async function wrapEach(
  sql: Sql,
  hasher: PasswordHasher,
  params: ScryptParams,
  currentPrefix: string,
  stopped: () => boolean,
): Promise<WrapResult> {
  const result: WrapResult = { wrapped: 0, unwrappable: 0 };
  let afterId = '0';
  for (;;) {
    const batch = await findOutdatedHashes(sql, currentPrefix, afterId, 100);
    for (const { id, passwordHash } of batch) {
      if (stopped()) return result;
      afterId = id;
      if (!hasher.needsRehash(passwordHash)) continue;
      const wrapped = await hasher.wrap(passwordHash);
      // Already wrapped to this cost, or stronger than the current parameters.
      if (wrapped === null) {
        if ((storedWork(passwordHash) ?? 0) > scryptWork(params)) result.unwrappable += 1;
        continue;
      }
      // Changes nothing if the password changed meanwhile.
      await upgradePasswordHash(sql, id, passwordHash, wrapped);
      result.wrapped += 1;
    }
    if (batch.length < 100) return result;
  }
}
