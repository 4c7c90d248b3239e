import { findOutdatedHashes, upgradePasswordHash } from './accounts.ts';
import type { ScryptParams } from '../config.ts';
import type { Sql } from '../storage/db.ts';
import { scryptWork, storedWork, type PasswordHasher } from './passwords.ts';

export type WrapResult = { wrapped: number; unwrappable: number };

/**
 * Wraps every stored hash made with other scrypt parameters in a layer that brings its cost
 * up to that of the current ones (PasswordHasher.wrap). Why: after SCRYPT_PARAMS changes, a
 * hash is upgraded only when its owner signs in, and until then a wrong password on a cheaper
 * hash would answer faster than an unknown name, telling which accounts exist. Runs once at
 * start-up, one hash at a time, so that it takes one hashing thread and never a request's slot.
 * A hash that costs more than the current parameters cannot be evened out and is counted.
 */
export async function wrapOutdatedHashes(sql: Sql, hasher: PasswordHasher, params: ScryptParams, stopped: () => boolean = () => false): Promise<WrapResult> {
  const result: WrapResult = { wrapped: 0, unwrappable: 0 };
  const currentPrefix = `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$`;
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
