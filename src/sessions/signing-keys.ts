import {
  createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject,
} from 'node:crypto';
import type { Sealer } from '../sealing.ts';
import type { Sql } from '../storage/db.ts';
import type { SigningKey } from './tokens.ts';

/**
 * The ES256 signing keys of TOKEN_ALG=ES256, kept in signing_keys (sql/017) with the private key
 * sealed under ENCRYPTION_KEYS, so that every instance signs with the same keys.
 *
 * A rotation only adds a key. The new key is published at once (the JWKS) but signs only
 * `signingKeyLeadMs` later, so that every instance (which reads the table every minute) and
 * every resource server knows it before any token carries it. The key it replaces then still
 * verifies, and is published, for as long as its last tokens live; after that the sweep
 * deletes it. Deleting a key by hand (`signing-key remove`) refuses its tokens at once at each
 * instance's next read of the table.
 */
export type SigningKeyRing = {
  /** The keys that verify now, the one that signs first (and those that will sign soon). */
  current(): SigningKey[];
  /** Their public keys, as an RFC 7517 key set. */
  jwks(): { keys: JsonWebKey[] };
  /** Reads the table again (the minutely sweep). */
  refresh(): Promise<void>;
};

/** How long a new key is published before it signs: longer than an instance takes to read it. */
export const signingKeyLeadMs = 2 * 60_000;
/** Tolerated clock difference between instances, as for a token's `iat` (tokens.ts). */
const skewMs = 5_000;

type StoredKey = SigningKey & { createdAt: Date; jwk: JsonWebKey };

export async function createSigningKeyRing(
  sql: Sql, sealer: Sealer, clock: () => Date, tokenTtlSeconds: number,
): Promise<SigningKeyRing> {
  let stored = await readSigningKeys(sql, sealer);
  if (stored.length === 0) {
    await addFirstSigningKey(sql, sealer, clock());
    stored = await readSigningKeys(sql, sealer);
  }
  const live = () => liveSigningKeys(stored, clock(), tokenTtlSeconds);
  return {
    current: live,
    jwks: () => ({ keys: live().map((key) => key.jwk) }),
    async refresh() {
      stored = await readSigningKeys(sql, sealer);
    },
  };
}

/**
 * The keys live at `now`, from the stored keys (newest first), the one that signs first: the
 * newest key older than the lead signs (the oldest, while every key is new). An older key
 * lives until the last tokens it signed have expired: its successor signed from its creation
 * plus the lead, and tokens live TOKEN_TTL.
 */
export function liveSigningKeys(stored: readonly StoredKey[], now: Date, tokenTtlSeconds: number): StoredKey[] {
  const readyIndex = stored.findIndex((key) => key.createdAt.getTime() + signingKeyLeadMs <= now.getTime());
  const signerIndex = readyIndex === -1 ? stored.length - 1 : readyIndex;
  const signer = stored[signerIndex];
  if (signer === undefined) return [];
  const lifeAfterReplaced = signingKeyLeadMs + tokenTtlSeconds * 1000 + skewMs;
  const stillVerifies = (index: number) => stored[index - 1]!.createdAt.getTime() + lifeAfterReplaced > now.getTime();
  const others = stored.filter((_, index) => index < signerIndex || (index > signerIndex && stillVerifies(index)));
  return [signer, ...others];
}

/** Adds a key that will sign after the lead; returns its key id. */
export async function addSigningKey(sql: Sql, sealer: Sealer, now: Date): Promise<string> {
  const key = generateSigningKey(sealer);
  await sql`INSERT INTO signing_keys (kid, sealed_private_key, created_at) VALUES (${key.kid}, ${key.sealed}, ${now})`;
  return key.kid;
}

/** The first key, made by the first start; concurrent first starts agree on one. */
async function addFirstSigningKey(sql: Sql, sealer: Sealer, now: Date): Promise<void> {
  const key = generateSigningKey(sealer);
  await sql.begin(async (tx) => {
    await tx`LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE`;
    await tx`
      INSERT INTO signing_keys (kid, sealed_private_key, created_at)
      SELECT ${key.kid}, ${key.sealed}, ${now} WHERE NOT EXISTS (SELECT 1 FROM signing_keys)`;
  });
}

/** Deletes a key by its id; its tokens are refused from each instance's next read. False if there is none. */
export async function removeSigningKey(sql: Sql, kid: string): Promise<boolean> {
  return (await sql`DELETE FROM signing_keys WHERE kid = ${kid}`).count === 1;
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
 * can add a key, or pair a kid with another key.
 */
async function readSigningKeys(sql: Sql, sealer: Sealer): Promise<StoredKey[]> {
  const rows = await sql<{ kid: string; sealed: Buffer; createdAt: Date }[]>`
    SELECT kid, sealed_private_key AS sealed, created_at AS "createdAt"
    FROM signing_keys ORDER BY created_at DESC, kid`;
  return rows.map((row) => {
    const opened = sealer.open(row.sealed, 'signing-key', row.kid);
    if (opened === null) {
      const advice = 'add the previous key after the new one';
      throw new Error(`the token signing key ${row.kid} opens with no key of ENCRYPTION_KEYS; ${advice}`);
    }
    const privateKey = createPrivateKey({ key: opened.plaintext, format: 'der', type: 'pkcs8' });
    const publicKey = createPublicKey(privateKey);
    const jwk = publicJwk(publicKey);
    if (jwk.kid !== row.kid) throw new Error(`the token signing key ${row.kid} is not the key its kid names`);
    return { kid: row.kid, privateKey, publicKey, createdAt: row.createdAt, jwk };
  });
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
