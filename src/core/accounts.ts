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
  /** The locale of mail to the account (null: MAIL_DEFAULT_LOCALE), mail/templates.ts. */
  locale: string | null;
  activatedAt: Date;
  /**
   * Read with the account by sign-in and by authentication (findAccountByLogin,
   * findSessionAccount), to spare a round trip: whether a second factor is active. Undefined
   * elsewhere (core/factor.ts reads it then). Its sealed secret is read only where a code is
   * checked.
   */
  factorActive?: boolean;
  /** Read by sign-in (findAccountByLogin) only: an operator disabled the account. Undefined elsewhere. */
  disabled?: boolean;
};

/** An account with the password hash that sign-in checks; the hash is read only where a password is checked. */
export type LoginAccount = Account & { passwordHash: string };

/** Finds an account by name or e-mail address; the two cannot collide, as only addresses hold an `@`. */
export async function findAccountByLogin(sql: Sql, username: string): Promise<LoginAccount | null> {
  const [row] = await sql<LoginAccount[]>`
    SELECT id, public_id AS "publicId", name, email, phone, locale, password_hash AS "passwordHash",
      activated_at AS "activatedAt",
      EXISTS (SELECT 1 FROM second_factors AS f WHERE f.account_id = accounts.id AND f.activated_at IS NOT NULL)
        AS "factorActive",
      disabled_at IS NOT NULL AS disabled
    FROM accounts
    WHERE (name = ${username} OR lower(email) = lower(${username})) AND activated_at IS NOT NULL`;
  return row ?? null;
}

/** The password hash an active account stores now, or null if it is gone. */
export async function findPasswordHash(sql: Sql, id: string): Promise<string | null> {
  const [row] = await sql`SELECT password_hash FROM accounts WHERE id = ${id} AND activated_at IS NOT NULL`;
  return (row?.password_hash as string | undefined) ?? null;
}

/**
 * Stores another hash of the same password (current parameters, or a wrapped chain). It changes
 * nothing if the password was changed meanwhile, and sessions stay as they are.
 */
export async function upgradePasswordHash(
  sql: Sql | Transaction, id: string, oldHash: string, newHash: string,
): Promise<void> {
  await sql`UPDATE accounts SET password_hash = ${newHash} WHERE id = ${id} AND password_hash = ${oldHash}`;
}

/**
 * Up to `limit` stored hashes, in id order after `afterId`, that are not one layer made with the
 * parameters `currentPrefix` begins (`$scrypt$ln=15,r=8,p=3$`). Pending registrations count too:
 * they become accounts with the hash they hold.
 */
export async function findOutdatedHashes(
  sql: Sql, currentPrefix: string, afterId: string, limit: number,
): Promise<Array<{ id: string; passwordHash: string }>> {
  return sql<Array<{ id: string; passwordHash: string }>>`
    SELECT id, password_hash AS "passwordHash" FROM accounts
    WHERE id > ${afterId} AND NOT starts_with(password_hash, ${currentPrefix})
    ORDER BY id LIMIT ${limit}`;
}


/** The public id of an account (it never changes), or null if the account is gone. */
export async function findPublicId(sql: Sql, id: string): Promise<string | null> {
  const [row] = await sql`SELECT public_id FROM accounts WHERE id = ${id}`;
  return (row?.public_id as string | undefined) ?? null;
}

/** Sets the locale of mail to the account (null: MAIL_DEFAULT_LOCALE); false if the account is gone. */
export async function setLocale(sql: Sql, id: string, locale: string | null): Promise<boolean> {
  const rows = await sql`UPDATE accounts SET locale = ${locale} WHERE id = ${id} AND activated_at IS NOT NULL`;
  return rows.count === 1;
}

/**
 * At most one "someone tried to register" or "someone tried to use your address" notice per
 * account in this time (registration attempts and e-mail changes alike), so
 * nobody can flood its mailbox.
 */
export const attemptNoticeIntervalMs = 60 * 60 * 1000;
