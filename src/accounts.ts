import type { Sql, Transaction } from './db.ts';

/** An active account. Pending registrations live in the same table but are never returned here. */
export type Account = {
  id: string;
  name: string;
  email: string;
  phone: string | null;
  passwordHash: string;
  credentialVersion: number;
  activatedAt: Date;
};

export async function findAccountById(sql: Sql, id: string): Promise<Account | null> {
  const [row] = await sql<Account[]>`
    SELECT id, name, email, phone, password_hash AS "passwordHash", credential_version AS "credentialVersion", activated_at AS "activatedAt"
    FROM accounts
    WHERE id = ${id} AND activated_at IS NOT NULL`;
  return row ?? null;
}

/** Finds an account by name or e-mail address; the two cannot collide, as only addresses hold an `@`. */
export async function findAccountByLogin(sql: Sql, username: string): Promise<Account | null> {
  const [row] = await sql<Account[]>`
    SELECT id, name, email, phone, password_hash AS "passwordHash", credential_version AS "credentialVersion", activated_at AS "activatedAt"
    FROM accounts
    WHERE (name = ${username} OR lower(email) = lower(${username})) AND activated_at IS NOT NULL`;
  return row ?? null;
}

/**
 * Stores a hash of the same password made with the current parameters. It changes nothing if the
 * password was changed meanwhile, and leaves the credential version alone: tokens stay valid.
 */
export async function upgradePasswordHash(sql: Sql, id: string, oldHash: string, newHash: string): Promise<void> {
  await sql`UPDATE accounts SET password_hash = ${newHash} WHERE id = ${id} AND password_hash = ${oldHash}`;
}

/**
 * Sets a new password and raises the credential version, which revokes every token issued
 * before. False if the version moved on meanwhile (a concurrent change won).
 */
export async function changePasswordHash(tx: Transaction, id: string, credentialVersion: number, newHash: string): Promise<boolean> {
  const rows = await tx`
    UPDATE accounts SET password_hash = ${newHash}, credential_version = credential_version + 1
    WHERE id = ${id} AND credential_version = ${credentialVersion} AND activated_at IS NOT NULL`;
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
