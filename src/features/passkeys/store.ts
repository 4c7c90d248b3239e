import { randomUUID } from 'node:crypto';
import type { Sql, Transaction } from '../../storage/db.ts';
import type { NewCredential } from './webauthn.ts';

/** The passkeys table (sql/020) and the spent challenges. The use cases hold the locks. */
export const maxPasskeysPerAccount = 20;

/** A passkey as its owner sees it. */
export type Passkey = {
  id: string; name: string; createdAt: Date; lastUsedAt: Date | null; backedUp: boolean; transports: string[];
};

/** What a sign-in reads by credential id: the key, the counter, and the owner with its user handle. */
export type PasskeyOwner = {
  id: string; publicKey: Buffer; signCount: number; backupEligible: boolean;
  accountId: string; publicId: string; userHandle: Buffer; passwordHash: string; email: string;
};

const columns = (sql: Sql | Transaction) =>
  sql`id, name, created_at AS "createdAt", last_used_at AS "lastUsedAt", backed_up AS "backedUp", transports`;

export async function listPasskeys(sql: Sql, accountId: string): Promise<Passkey[]> {
  return sql<Passkey[]>`SELECT ${columns(sql)} FROM passkeys WHERE account_id = ${accountId} ORDER BY created_at, id`;
}

/** The credential ids of the account, for excludeCredentials, and how many there are. */
export async function credentialIdsOf(tx: Transaction, accountId: string) {
  return tx<{ id: Buffer; transports: string[] }[]>`
    SELECT credential_id AS id, transports FROM passkeys WHERE account_id = ${accountId}`;
}

/**
 * Inserts the passkey if the account holds fewer than the cap and no account holds its
 * credential id; null otherwise. Called with the account row locked, so that two concurrent
 * additions cannot both pass the count; the unique credential id decides between accounts.
 */
export async function insertPasskey(
  tx: Transaction, accountId: string, credential: NewCredential, name: string, now: Date,
): Promise<Passkey | null> {
  const { credentialId, publicKey, algorithm, signCount, transports, backupEligible, backedUp, aaguid } = credential;
  const [row] = await tx<Passkey[]>`
    INSERT INTO passkeys (id, account_id, credential_id, public_key, algorithm, sign_count, transports,
      backup_eligible, backed_up, aaguid, name, created_at)
    SELECT ${randomUUID()}, ${accountId}, ${credentialId}, ${publicKey}, ${algorithm}, ${signCount},
      ${transports}::text[], ${backupEligible}, ${backedUp}, ${aaguid}, ${name}, ${now}
    WHERE (SELECT count(*) FROM passkeys WHERE account_id = ${accountId}) < ${maxPasskeysPerAccount}
    ON CONFLICT (credential_id) DO NOTHING
    RETURNING ${columns(tx)}`;
  return row ?? null;
}

/** Gives the account's passkey a new name; the passkey, or null when the account has none with this id. */
export async function renamePasskey(
  sql: Sql | Transaction, accountId: string, id: string, name: string,
): Promise<{ passkey: Passkey; changed: boolean } | null> {
  const [before] = await sql`SELECT name FROM passkeys WHERE id = ${id} AND account_id = ${accountId} FOR UPDATE`;
  if (before === undefined) return null;
  const [row] = await sql<Passkey[]>`
    UPDATE passkeys SET name = ${name} WHERE id = ${id} AND account_id = ${accountId} RETURNING ${columns(sql)}`;
  return row === undefined ? null : { passkey: row, changed: before.name !== name };
}

/** Deletes the account's passkey; its name, or null when the account has none with this id. */
export async function deletePasskey(tx: Transaction, accountId: string, id: string): Promise<string | null> {
  const [row] = await tx`DELETE FROM passkeys WHERE id = ${id} AND account_id = ${accountId} RETURNING name`;
  return (row?.name as string | undefined) ?? null;
}

/** The passkey with this credential id and its active owner, or null. */
export async function findPasskeyOwner(sql: Sql, credentialId: Buffer): Promise<PasskeyOwner | null> {
  const [row] = await sql<PasskeyOwner[]>`
    SELECT p.id, p.public_key AS "publicKey", p.sign_count::int8::float8 AS "signCount",
      p.backup_eligible AS "backupEligible", a.id AS "accountId", a.public_id AS "publicId",
      a.user_handle AS "userHandle", a.password_hash AS "passwordHash", a.email
    FROM passkeys p JOIN accounts a ON a.id = p.account_id
    WHERE p.credential_id = ${credentialId} AND a.activated_at IS NOT NULL`;
  return row ?? null;
}

/**
 * The sign-count compare-and-set: it moves only from the value the assertion was checked
 * against, so that of two sign-ins with one counter value only one passes.
 */
export async function recordPasskeyUse(
  sql: Sql | Transaction, id: string, checkedCount: number, signCount: number, backedUp: boolean, now: Date,
): Promise<boolean> {
  const rows = await sql`
    UPDATE passkeys SET sign_count = ${signCount}, backed_up = ${backedUp}, last_used_at = ${now}
    WHERE id = ${id} AND sign_count = ${checkedCount}`;
  return rows.count === 1;
}

export async function findUserHandle(tx: Transaction, accountId: string): Promise<Buffer> {
  const [row] = await tx`SELECT user_handle FROM accounts WHERE id = ${accountId}`;
  return row!.user_handle as Buffer;
}

/** Marks a challenge spent; false if it was already. Exactly one of concurrent presenters inserts the row. */
export async function spendChallenge(sql: Sql | Transaction, challenge: Buffer, expiresAt: Date): Promise<boolean> {
  const rows = await sql`
    INSERT INTO spent_passkey_challenges (challenge, expires_at) VALUES (${challenge}, ${expiresAt})
    ON CONFLICT DO NOTHING`;
  return rows.count === 1;
}

/**
 * How long a spent challenge is kept past its expiry. Each instance checks a challenge's expiry by its own clock,
 * so a spent one deleted at its expiry could be presented again at an instance whose clock is behind; the margin
 * is well over the skew the service tolerates (docs/security.md, "Clocks").
 */
export const spentChallengeMarginMs = 5 * 60_000;

/** Deletes the spent challenges that expired more than spentChallengeMarginMs before `now`. */
export async function deleteExpiredChallenges(sql: Sql, now: Date): Promise<number> {
  const before = new Date(now.getTime() - spentChallengeMarginMs);
  return (await sql`DELETE FROM spent_passkey_challenges WHERE expires_at < ${before}`).count;
}
