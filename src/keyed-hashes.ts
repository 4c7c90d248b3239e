import { createHmac, hkdfSync } from 'node:crypto';
import type { Sealer } from './sealing.ts';
import type { Sql } from './storage/db.ts';

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

const purposes = { address: 'address quota v1', loginIdentifier: 'login identifier v1', client: 'login client v1' } as const;
type Purpose = keyof typeof purposes;

export type KeyedHashKeys = Record<Purpose, Buffer>;

/** The keys as derived from one secret with HKDF: what every version before sql/008 used, from the first TOKEN_SECRET. */
export function deriveKeys(secret: Buffer): KeyedHashKeys {
  const derive = (purpose: Purpose) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `account-service ${purposes[purpose]}`, 32));
  return { address: derive('address'), loginIdentifier: derive('loginIdentifier'), client: derive('client') };
}

export function createKeyedHashes(keys: KeyedHashKeys): KeyedHashes {
  const hasher = (key: Buffer) => (value: string) => createHmac('sha256', key).update(value.toLowerCase()).digest();
  return { address: hasher(keys.address), loginIdentifier: hasher(keys.loginIdentifier), client: hasher(keys.client) };
}

/**
 * The keys of the keyed hashes, stored once in keyed_hash_keys (sql/008) so that a TOKEN_SECRET
 * rotation does not reset every throttle, cooldown and daily cap. Stored only sealed under the
 * token secrets (sealing.ts): a dump of the database alone cannot recompute a keyed hash.
 *
 * The first start after the migration stores the keys derived from the first TOKEN_SECRET, as
 * they were derived before, so that today's counters keep counting. Each start re-seals them
 * under the first secret, so that an old secret can be dropped after a rotation (the README's
 * procedure: `new,old` for a while, then `new`). Keys that no configured secret opens (the old
 * secret dropped before an instance ran with `new,old`) stop the start with a KeyedHashError.
 */
export async function loadKeyedHashes(sql: Sql, sealer: Sealer, firstSecret: Buffer): Promise<KeyedHashes> {
  const initial = deriveKeys(firstSecret);
  const names = Object.keys(purposes) as Purpose[];
  const seal = (key: Buffer) => sealer.seal(key.toString('base64'));
  // Concurrent first starts: the first insert wins, the others read what it stored.
  await sql`
    INSERT INTO keyed_hash_keys ${sql(names.map((purpose) => ({ purpose, sealed_key: seal(initial[purpose]) })))}
    ON CONFLICT (purpose) DO NOTHING`;
  const rows = await sql`SELECT purpose, sealed_key FROM keyed_hash_keys WHERE purpose IN ${sql(names)}`;
  const opened = new Map(rows.map((row) => [row.purpose as Purpose, sealer.open(row.sealed_key as Buffer)]));
  if (names.some((purpose) => typeof opened.get(purpose) !== 'string')) {
    throw new KeyedHashError('the keys of the sign-in throttle and code quotas (keyed_hash_keys) open with no TOKEN_SECRET; add the previous secret after the new one (TOKEN_SECRET=new,old), or delete the table\'s rows to start every counter afresh');
  }
  const keys = Object.fromEntries(names.map((purpose) => [purpose, Buffer.from(opened.get(purpose)!, 'base64')])) as KeyedHashKeys;
  for (const purpose of names) await sql`UPDATE keyed_hash_keys SET sealed_key = ${seal(keys[purpose])} WHERE purpose = ${purpose}`;
  return createKeyedHashes(keys);
}

/** Raised at start when the stored keys cannot be opened; its message is one line. */
export class KeyedHashError extends Error {
  override name = 'KeyedHashError';
}
