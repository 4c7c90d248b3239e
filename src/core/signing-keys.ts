import {
  createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject,
} from 'node:crypto';
import type { Sealer } from './sealing.ts';
import type { Sql } from '../storage/db.ts';
import type { SigningKey } from './tokens.ts';

/**
 * The ES256 signing keys of TOKEN_ALG=ES256, kept in signing_keys (sql/017) with the private key
 * sealed under ENCRYPTION_KEYS, so that every instance signs with the same keys.
 *
 * A rotation only adds a key. The new key is published at once (the JWKS reads the table's key
 * ids on each request) but signs only `signingKeyLeadMs` later, so that every instance (which
 * reads the table every minute) and every resource server knows it before any token carries it.
 * The key it replaces then still verifies, and is published, for as long as its last tokens
 * live; after that the sweep deletes it. Deleting a key by hand (`signing-key remove`) refuses
 * its tokens at each instance's next read of the table.
 */
export type SigningKeyRing = {
  /** The keys that verify now, the one that signs first; only that one carries its private key. */
  current(): SigningKey[];
  /** Their public keys, as an RFC 7517 key set; the table is read again first if its key ids changed. */
  jwks(): Promise<{ keys: JsonWebKey[] }>;
  /** Reads the table again (first in the minutely sweep); returns the stored keys it could not open. */
  refresh(): Promise<UnreadableKey[]>;
};

/**
 * A stored key that a read could not open, or whose kid names another key: left out, unless it
 * was opened before (then the key in memory, the same by its kid, stays in use).
 */
export type UnreadableKey = { kid: string; reason: string };

/** How long a new key is published before it signs: longer than an instance takes to read it. */
export const signingKeyLeadMs = 2 * 60_000;
/** Tolerated clock difference between instances, as for a token's `iat` (tokens.ts). */
const skewMs = 5_000;

type StoredKey = SigningKey & { createdAt: Date; jwk: JsonWebKey };

export async function createSigningKeyRing(
  sql: Sql, sealer: Sealer, clock: () => Date, tokenTtlSeconds: number,
): Promise<SigningKeyRing> {
  if ((await sql`SELECT 1 FROM signing_keys LIMIT 1`).length === 0) await addFirstSigningKey(sql, sealer, clock());
  // At the start every key must open: a wrong ENCRYPTION_KEYS stops the service here, not at each sign-in.
  let read = await readSigningKeys(sql, sealer, []);
  const [refused] = read.unreadable;
  if (refused !== undefined) throw new Error(`the token signing key ${refused.kid} ${refused.reason}`);
  const refresh = async () => {
    read = await readSigningKeys(sql, sealer, read.stored);
    return read.unreadable;
  };
  const live = () => liveSigningKeys(read.stored, clock(), tokenTtlSeconds);
  return {
    current: live,
    async jwks() {
      try {
        const rows = await sql<{ kid: string }[]>`SELECT kid FROM signing_keys`;
        if (rows.map((row) => row.kid).sort().join() !== read.kids.join()) await refresh();
      } catch {
        // The database away: the keys this instance verifies with, which are what it last read.
      }
      return { keys: live().map((key) => key.jwk) };
    },
    refresh,
  };
}

/**
 * The keys live at `now`, from the stored keys (newest first), the one that signs first: the
 * newest key whose time has come (its creation plus the lead). No key signs before its time,
 * even when no other is left; the others verify only, without their private keys. An older key
 * lives until the last tokens it signed have expired: its successor signed from its creation
 * plus the lead, and tokens live TOKEN_TTL.
 */
export function liveSigningKeys(stored: readonly StoredKey[], now: Date, tokenTtlSeconds: number): StoredKey[] {
  const signerIndex = stored.findIndex((key) => key.createdAt.getTime() + signingKeyLeadMs <= now.getTime());
  const lifeAfterReplaced = signingKeyLeadMs + tokenTtlSeconds * 1000 + skewMs;
  const stillVerifies = (index: number) => stored[index - 1]!.createdAt.getTime() + lifeAfterReplaced > now.getTime();
  const verifying = stored
    .filter((_, index) => signerIndex === -1 || index < signerIndex || (index > signerIndex && stillVerifies(index)))
    .map((key) => ({ ...key, privateKey: null }));
  return signerIndex === -1 ? verifying : [stored[signerIndex]!, ...verifying];
}

/** Adds a key that will sign after the lead; returns its key id. */
export async function addSigningKey(sql: Sql, sealer: Sealer, now: Date): Promise<string> {
  const key = generateSigningKey(sealer);
  await sql`INSERT INTO signing_keys (kid, sealed_private_key, created_at) VALUES (${key.kid}, ${key.sealed}, ${now})`;
  return key.kid;
}

/**
 * The first key, made by the first start; concurrent first starts agree on one. It signs at once
 * (its creation is set back by the lead): no instance or resource server knows another key.
 */
async function addFirstSigningKey(sql: Sql, sealer: Sealer, now: Date): Promise<void> {
  const key = generateSigningKey(sealer);
  const signsNow = new Date(now.getTime() - signingKeyLeadMs);
  await sql.begin(async (tx) => {
    await tx`LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE`;
    await tx`
      INSERT INTO signing_keys (kid, sealed_private_key, created_at)
      SELECT ${key.kid}, ${key.sealed}, ${signsNow} WHERE NOT EXISTS (SELECT 1 FROM signing_keys)`;
  });
}

export type SigningKeyRemoval =
  | { outcome: 'removed' } | { outcome: 'unknown' } | { outcome: 'newest' }
  | { outcome: 'no-signer'; signsFrom: Date };

/**
 * Deletes a key by its id; its tokens are refused from each instance's next read. Refused for
 * the newest key (the service would sign with an older one again), and while no other key may
 * sign: a key signs only from its time, so removing the one that signs before its successor's
 * time (and the skew) would leave every instance without a key to sign with.
 */
export async function removeSigningKey(sql: Sql, kid: string, now: Date): Promise<SigningKeyRemoval> {
  return sql.begin(async (tx) => {
    // Two removals at once must not each count on the key that the other removes.
    await tx`LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE`;
    const keys = await tx<{ kid: string; createdAt: Date }[]>`
      SELECT kid, created_at AS "createdAt" FROM signing_keys ORDER BY created_at DESC, kid`;
    if (!keys.some((key) => key.kid === kid)) return { outcome: 'unknown' as const };
    if (keys[0]!.kid === kid) return { outcome: 'newest' as const };
    const signsFrom = (key: { createdAt: Date }) => key.createdAt.getTime() + signingKeyLeadMs + skewMs;
    const others = keys.filter((key) => key.kid !== kid);
    if (!others.some((key) => signsFrom(key) <= now.getTime())) {
      return { outcome: 'no-signer' as const, signsFrom: new Date(Math.min(...others.map(signsFrom))) };
    }
    await tx`DELETE FROM signing_keys WHERE kid = ${kid}`;
    return { outcome: 'removed' as const };
  });
}

/**
 * Deletes the keys whose tokens have all expired (the sweep): those with a newer key that has
 * signed for longer than TOKEN_TTL. Decided in the table, so that a key added meanwhile by
 * another process is never taken for a retired one.
 */
export async function deleteRetiredSigningKeys(sql: Sql, now: Date, tokenTtlSeconds: number): Promise<number> {
  const newerSince = new Date(now.getTime() - signingKeyLeadMs - tokenTtlSeconds * 1000 - skewMs);
  const rows = await sql`
    DELETE FROM signing_keys AS k
    WHERE EXISTS (
      SELECT 1 FROM signing_keys AS newer WHERE newer.created_at > k.created_at AND newer.created_at < ${newerSince})`;
  return rows.count;
}

/**
 * Every stored key, opened. The public key is derived from the sealed private key, and the kid
 * (the associated data of the sealed value) must be its thumbprint: nothing but ENCRYPTION_KEYS
 * can add a key, or pair a kid with another key. A row that fails either check is reported and
 * does not keep the others from being read, so a removed key is gone from the result whatever
 * else is stored; such a row is left out unless its key was opened before (`known`).
 */
async function readSigningKeys(
  sql: Sql, sealer: Sealer, known: readonly StoredKey[],
): Promise<{ stored: StoredKey[]; unreadable: UnreadableKey[]; kids: string[] }> {
  const rows = await sql<{ kid: string; sealed: Buffer; createdAt: Date }[]>`
    SELECT kid, sealed_private_key AS sealed, created_at AS "createdAt"
    FROM signing_keys ORDER BY created_at DESC, kid`;
  const stored: StoredKey[] = [];
  const unreadable: UnreadableKey[] = [];
  for (const row of rows) {
    const key = openSigningKey(sealer, row);
    const previous = known.find((candidate) => candidate.kid === row.kid);
    if (typeof key !== 'string') stored.push(key);
    else if (previous !== undefined) stored.push({ ...previous, createdAt: row.createdAt });
    if (typeof key === 'string') unreadable.push({ kid: row.kid, reason: key });
  }
  return { stored, unreadable, kids: rows.map((row) => row.kid).sort() };
}

/** One stored key, opened and checked against its kid; else why not. */
function openSigningKey(sealer: Sealer, row: { kid: string; sealed: Buffer; createdAt: Date }): StoredKey | string {
  const opened = sealer.open(row.sealed, 'signing-key', row.kid);
  if (opened === null) return 'opens with no key of ENCRYPTION_KEYS; add the previous key after the new one';
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: opened.plaintext, format: 'der', type: 'pkcs8' });
  } catch {
    return 'is not a private key';
  }
  const publicKey = createPublicKey(privateKey);
  const jwk = publicJwk(publicKey);
  if (jwk.kid !== row.kid) return 'is not the key its kid names';
  return { kid: row.kid, privateKey, publicKey, createdAt: row.createdAt, jwk };
}

function generateSigningKey(sealer: Sealer): { kid: string; sealed: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kid } = publicJwk(publicKey);
  return { kid, sealed: sealer.seal(privateKey.export({ format: 'der', type: 'pkcs8' }), 'signing-key', kid) };
}

/** The public key as a JWK, its kid the RFC 7638 thumbprint: the required members, in lexical order, hashed. */
function publicJwk(publicKey: KeyObject): JsonWebKey & { kid: string } {
  const { crv, kty, x, y } = publicKey.export({ format: 'jwk' });
  const kid = createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest('base64url');
  return { kty, crv, x, y, kid, alg: 'ES256', use: 'sig' };
}
