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

/** The columns of a LoginAccount, of the accounts row named `a`: what every way in reads of its account. */
export const loginAccountColumns = (sql: Sql) => sql`
  a.id, a.public_id AS "publicId", a.name, a.email, a.phone, a.locale, a.password_hash AS "passwordHash",
  a.activated_at AS "activatedAt", a.disabled_at IS NOT NULL AS disabled,
  EXISTS (SELECT 1 FROM second_factors AS f WHERE f.account_id = a.id AND f.activated_at IS NOT NULL)
    AS "factorActive"`;

/** Finds an account by name or e-mail address; the two cannot collide, as only addresses hold an `@`. */
export async function findAccountByLogin(sql: Sql, username: string): Promise<LoginAccount | null> {
  const [row] = await sql<LoginAccount[]>`
    SELECT ${loginAccountColumns(sql)} FROM accounts a
    WHERE (a.name = ${username} OR lower(a.email) = lower(${username})) AND a.activated_at IS NOT NULL`;
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




/**
 * At most one "someone tried to register" or "someone tried to use your address" notice per
 * account in this time (registration attempts and e-mail changes alike), so
 * nobody can flood its mailbox.
 */
export const attemptNoticeIntervalMs = 60 * 60 * 1000;

/**
 * Records that the holder of an address is told that someone tried to use it, unless it was
 * told within the notice interval (registration attempts and e-mail changes alike) or no longer holds the
 * address; returns where to write and whom to greet, or null. With `holderId` null the same
 * statement runs and writes nothing.
 */
export async function claimAttemptNotice(
  tx: Transaction, holderId: string | null, email: string, now: Date,
): Promise<{ email: string; name: string; locale: string | null; pending: boolean } | null> {
  const [row] = await tx<Array<{ email: string; name: string; locale: string | null; pending: boolean }>>`
    UPDATE accounts SET attempt_notified_at = ${now}
    WHERE id = ${holderId} AND lower(email) = lower(${email})
      AND (attempt_notified_at IS NULL OR attempt_notified_at <= ${new Date(now.getTime() - attemptNoticeIntervalMs)})
    RETURNING email, name, locale, activated_at IS NULL AS pending`;
  return row ?? null;
}
