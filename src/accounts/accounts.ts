import type { Sql, Transaction } from '../storage/db.ts';

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
export async function upgradePasswordHash(sql: Sql | Transaction, id: string, oldHash: string, newHash: string): Promise<void> {
  await sql`UPDATE accounts SET password_hash = ${newHash} WHERE id = ${id} AND password_hash = ${oldHash}`;
}

/**
 * Locks the account row for the rest of the transaction if it still holds `passwordHash`; false
 * if the password was changed or reset meanwhile, or the account is gone. A change, a reset and
 * a deletion all write the row, so they wait for this transaction or it waits for them.
 */
export async function lockUnchangedPasswordHash(tx: Transaction, id: string, passwordHash: string): Promise<boolean> {
  const rows = await tx`SELECT 1 FROM accounts WHERE id = ${id} AND password_hash = ${passwordHash} AND activated_at IS NOT NULL FOR UPDATE`;
  return rows.count === 1;
}

/**
 * Sets a new password and ends every session of the account, in the caller's transaction.
 * False, changing nothing, if the caller's own session was revoked meanwhile (for instance
 * by a concurrent change, which then won).
 */
export async function changePasswordHash(tx: Transaction, id: string, callerSessionId: string, newHash: string): Promise<boolean> {
  if (!(await lockAccountOfSession(tx, id, callerSessionId))) return false;
  await tx`DELETE FROM sessions WHERE account_id = ${id}`;
  await tx`UPDATE accounts SET password_hash = ${newHash} WHERE id = ${id}`;
  return true;
}

/**
 * Locks the account row, then checks that the caller's session still lives. Two statements on
 * purpose: the check must see what a transaction that held the lock before committed, and
 * only a statement that starts after the lock is granted does. Every change that needs the
 * caller's session (password change, deletion) goes through here, so that of two racing
 * changes the second sees the first and loses.
 */
async function lockAccountOfSession(tx: Transaction, id: string, sessionId: string): Promise<boolean> {
  const locked = await tx`SELECT 1 FROM accounts WHERE id = ${id} AND activated_at IS NOT NULL FOR UPDATE`;
  if (locked.count === 0) return false;
  const [row] = await tx`SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ${sessionId} AND account_id = ${id}) AS live`;
  return row!.live as boolean;
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

/**
 * Deletes an active account, in the caller's transaction, if the caller's session still lives.
 * Its sessions, refresh tokens, codes and events go with it (foreign keys cascade); its code
 * quotas (by the keyed hashes of its address) and every message to its address are deleted
 * here, so that nothing of it stays behind but the notice the caller queues next.
 */
export async function deleteAccount(tx: Transaction, id: string, callerSessionId: string, addressKeys: Buffer[]): Promise<boolean> {
  if (!(await lockAccountOfSession(tx, id, callerSessionId))) return false;
  const [row] = await tx`DELETE FROM accounts WHERE id = ${id} RETURNING email`;
  await tx`DELETE FROM address_quotas WHERE address_key IN ${tx(addressKeys)}`;
  await tx`DELETE FROM name_holds WHERE address = lower(${row!.email as string})`;
  await tx`DELETE FROM outbox WHERE lower(recipient) = lower(${row!.email as string})`;
  return true;
}
