import type { Sql, Transaction } from './db.ts';

/** An active account. Pending registrations live in the same table but are never returned here. */
export type Account = {
  /** The row id: internal only, never shown to a client. */
  id: string;
  /** The id clients see (token `sub`, GET /acc/me): a random UUID. */
  publicId: string;
  name: string;
  email: string;
  phone: string | null;
  passwordHash: string;
  activatedAt: Date;
};

/** Finds an account by name or e-mail address; the two cannot collide, as only addresses hold an `@`. */
export async function findAccountByLogin(sql: Sql, username: string): Promise<Account | null> {
  const [row] = await sql<Account[]>`
    SELECT id, public_id AS "publicId", name, email, phone, password_hash AS "passwordHash", activated_at AS "activatedAt"
    FROM accounts
    WHERE (name = ${username} OR lower(email) = lower(${username})) AND activated_at IS NOT NULL`;
  return row ?? null;
}

/**
 * Stores another hash of the same password (current parameters, or a wrapped chain). It changes
 * nothing if the password was changed meanwhile, and sessions stay as they are.
 */
export async function upgradePasswordHash(sql: Sql, id: string, oldHash: string, newHash: string): Promise<void> {
  await sql`UPDATE accounts SET password_hash = ${newHash} WHERE id = ${id} AND password_hash = ${oldHash}`;
}

/**
 * Sets a new password and ends every session of the account, in the caller's transaction.
 * False, changing nothing, if the caller's own session was revoked meanwhile (for instance
 * by a concurrent change, which then won).
 */
export async function changePasswordHash(tx: Transaction, id: string, callerSessionId: string, newHash: string): Promise<boolean> {
  const rows = await tx`
    WITH ended AS (DELETE FROM sessions WHERE account_id = ${id} RETURNING id)
    UPDATE accounts SET password_hash = ${newHash}
    WHERE id = ${id} AND activated_at IS NOT NULL AND EXISTS (SELECT 1 FROM ended WHERE ended.id = ${callerSessionId})`;
  return rows.count === 1;
}

/**
 * Up to `limit` stored hashes, in id order after `afterId`, that are not one layer made with the
 * parameters `currentPrefix` begins (`$scrypt$ln=15,r=8,p=3$`). Pending registrations count too:
 * they become accounts with the hash they hold.
 */
export async function findOutdatedHashes(sql: Sql, currentPrefix: string, afterId: string, limit: number): Promise<Array<{ id: string; passwordHash: string }>> {
  return sql<Array<{ id: string; passwordHash: string }>>`
    SELECT id, password_hash AS "passwordHash" FROM accounts
    WHERE id > ${afterId} AND NOT starts_with(password_hash, ${currentPrefix})
    ORDER BY id LIMIT ${limit}`;
}
