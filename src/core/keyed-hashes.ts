import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import type { Sealer } from './sealing.ts';
import type { Sql } from '../storage/db.ts';

/**
 * Keyed hashes (HMAC-SHA256) of what callers typed, for tables that count per address or per
 * name. Keyed, so that the tables hold nothing that could be read back or matched against a
 * list of addresses without the key. Each purpose has its own key. Values are lower-cased
 * first: names and addresses ignore case.
 */
export type KeyedHashes = {
  /** An e-mail address, for the per-address code quotas. */
  address(email: string): Buffer;
  /** A sign-in identifier (a name or an address, as typed), for the sign-in throttle. */
  loginIdentifier(username: string): Buffer;
  /** A client (IP) address, for the sign-in throttle. */
  client(address: string): Buffer;
};

export const keyedHashPurposes = ['address', 'loginIdentifier', 'client'] as const;
type Purpose = (typeof keyedHashPurposes)[number];

export function createKeyedHashes(keys: Record<Purpose, Buffer>): KeyedHashes {
  // A key object made once: given bytes, node:crypto would build one for every hash.
  const hasher = (bytes: Buffer) => {
    const key = createSecretKey(bytes);
    return (value: string) => createHmac('sha256', key).update(value.toLowerCase()).digest();
  };
  return { address: hasher(keys.address), loginIdentifier: hasher(keys.loginIdentifier), client: hasher(keys.client) };
}

/**
 * The keys of the keyed hashes: random, made by the first start and stored in keyed_hash_keys,
 * sealed under ENCRYPTION_KEYS (sealing.ts), so that a copy of the database alone cannot
 * recompute a keyed hash, and no key rotation resets a throttle, cooldown or daily cap. Each
 * start seals again those under an old encryption key. Keys that no configured encryption key
 * opens stop the start with a KeyedHashError.
 */
export async function loadKeyedHashes(sql: Sql, sealer: Sealer): Promise<KeyedHashes> {
  const seal = (purpose: Purpose, key: Buffer) => sealer.seal(key, 'keyed-hash-key', purpose);
  // Concurrent first starts: the first insert wins, the others read what it stored.
  const fresh = keyedHashPurposes.map((purpose) => ({ purpose, sealed_key: seal(purpose, randomBytes(32)) }));
  await sql`INSERT INTO keyed_hash_keys ${sql(fresh)} ON CONFLICT (purpose) DO NOTHING`;
  const rows = await sql<{ purpose: Purpose; sealed_key: Buffer }[]>`
    SELECT purpose, sealed_key FROM keyed_hash_keys WHERE purpose IN ${sql(keyedHashPurposes)}`;
  const keys = {} as Record<Purpose, Buffer>;
  for (const row of rows) {
    const opened = sealer.open(row.sealed_key, 'keyed-hash-key', row.purpose);
    if (opened === null) {
      throw new KeyedHashError(
        'the keys of the sign-in throttle and code quotas (keyed_hash_keys) open with no key of ENCRYPTION_KEYS; ' +
          'add the previous key after the new one (ENCRYPTION_KEYS=new,old), ' +
          "or delete the table's rows to start every counter afresh",
      );
    }
    keys[row.purpose] = opened.plaintext;
    if (!opened.current) {
      await sql`
        UPDATE keyed_hash_keys SET sealed_key = ${seal(row.purpose, opened.plaintext)}
        WHERE purpose = ${row.purpose} AND sealed_key = ${row.sealed_key}`;
    }
  }
  return createKeyedHashes(keys);
}

/** Raised at start when the stored keys cannot be opened; its message is one line. */
export class KeyedHashError extends Error {
  override name = 'KeyedHashError';
}
