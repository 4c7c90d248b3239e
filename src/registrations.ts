import type { Sql, Transaction } from './db.ts';

export type NewRegistration = { name: string; email: string; phone: string | null; passwordHash: string; expiresAt: Date };

/**
 * What holds the address: nothing, an active account, or a pending registration. `email` is
 * the address as stored, which is where mail about it goes, whatever spelling a caller typed.
 */
export type AddressHolder =
  | { active: true; id: string; name: string; email: string; attemptNotifiedAt: Date | null }
  | { active: false; id: string; name: string; email: string; expiresAt: Date }
  | null;

/**
 * Deletes expired registrations that hold this name or address, so that expiry frees them at
 * once rather than at the next sweep. Their codes go with them.
 */
export async function releaseExpiredHolders(tx: Transaction, name: string, email: string, now: Date): Promise<void> {
  await tx`
    DELETE FROM accounts
    WHERE activated_at IS NULL AND expires_at <= ${now} AND (name = ${name} OR lower(email) = lower(${email}))`;
}

/**
 * True when the name belongs to an active account, or to a pending registration of another
 * address. The same query runs whatever the state of `email`, so that a 409 says nothing
 * about the address; the unique index still decides any race.
 */
export async function isNameTaken(tx: Transaction, name: string, email: string): Promise<boolean> {
  const [row] = await tx`
    SELECT EXISTS (
      SELECT 1 FROM accounts WHERE name = ${name} AND (activated_at IS NOT NULL OR lower(email) <> lower(${email}))
    ) AS taken`;
  return row!.taken as boolean;
}

/** Locks and returns what holds the address, so that concurrent requests for it queue up. */
export async function lockAddressHolder(tx: Transaction, email: string): Promise<AddressHolder> {
  const [row] = await tx`
    SELECT id, name, email, activated_at, expires_at, attempt_notified_at
    FROM accounts WHERE lower(email) = lower(${email}) FOR UPDATE`;
  if (row === undefined) return null;
  const { id, name } = row as { id: string; name: string };
  return row.activated_at === null
    ? { active: false, id, name, email: row.email, expiresAt: row.expires_at }
    : { active: true, id, name, email: row.email, attemptNotifiedAt: row.attempt_notified_at };
}

/** Records that the owner of an active account was told of a registration attempt. */
export async function recordAttemptNotice(tx: Transaction, id: string, now: Date): Promise<void> {
  await tx`UPDATE accounts SET attempt_notified_at = ${now} WHERE id = ${id}`;
}

/** Inserts a pending registration and returns its id; a name held by any other row fails on `accounts_name_key`. */
export async function insertRegistration(tx: Transaction, registration: NewRegistration): Promise<string> {
  const [row] = await tx`
    INSERT INTO accounts (name, email, phone, password_hash, expires_at)
    VALUES (${registration.name}, ${registration.email}, ${registration.phone}, ${registration.passwordHash}, ${registration.expiresAt})
    RETURNING id`;
  return row!.id as string;
}

/** Turns a pending registration into an account; returns its stored name and address, or null if it is not pending. */
export async function activateRegistration(tx: Transaction, id: string, now: Date): Promise<{ name: string; email: string } | null> {
  const [row] = await tx<{ name: string; email: string }[]>`
    UPDATE accounts SET activated_at = ${now}, expires_at = NULL
    WHERE id = ${id} AND activated_at IS NULL
    RETURNING name, email`;
  return row ?? null;
}

/** Deletes registrations that expired before `before`, with their codes; returns how many. */
export async function deleteExpiredRegistrations(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM accounts WHERE activated_at IS NULL AND expires_at < ${before}`;
  return rows.count;
}
