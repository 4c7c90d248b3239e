import type { Sql, Transaction } from './db.ts';

export type RegistrationRequest = {
  name: string;
  email: string;
  phone: string | null;
  passwordHash: string;
  codeHash: Buffer;
  sentAt: Date;
  expiresAt: Date;
};

/** What holds the address: nothing, an active account, or a pending registration sent at `codeSentAt`. */
export type AddressHolder =
  | { active: true; id: string; attemptNotifiedAt: Date | null }
  | { active: false; id: string; codeSentAt: Date }
  | null;

export type PendingRegistration = { id: string; name: string; email: string; expiresAt: Date };

/**
 * Deletes expired registrations that hold this name or address, so that expiry frees them at
 * once rather than at the next sweep.
 */
export async function releaseExpiredHolders(tx: Transaction, name: string, email: string, now: Date): Promise<void> {
  await tx`
    DELETE FROM accounts
    WHERE activated_at IS NULL AND code_expires_at <= ${now} AND (name = ${name} OR lower(email) = lower(${email}))`;
}

/** Locks and returns what holds the address, so that concurrent requests for it queue up. */
export async function lockAddressHolder(tx: Transaction, email: string): Promise<AddressHolder> {
  const [row] = await tx`
    SELECT id, activated_at, code_sent_at, attempt_notified_at FROM accounts WHERE lower(email) = lower(${email}) FOR UPDATE`;
  if (row === undefined) return null;
  return row.activated_at === null
    ? { active: false, id: row.id, codeSentAt: row.code_sent_at }
    : { active: true, id: row.id, attemptNotifiedAt: row.attempt_notified_at };
}

/** Records that the owner of an active account was told of a registration attempt. */
export async function recordAttemptNotice(tx: Transaction, id: string, now: Date): Promise<void> {
  await tx`UPDATE accounts SET attempt_notified_at = ${now} WHERE id = ${id}`;
}

/** Inserts a pending registration; a name held by any other row fails on `accounts_name_key`. */
export async function insertRegistration(tx: Transaction, request: RegistrationRequest): Promise<void> {
  await tx`
    INSERT INTO accounts (name, email, phone, password_hash, code_hash, code_sent_at, code_expires_at)
    VALUES (${request.name}, ${request.email}, ${request.phone}, ${request.passwordHash}, ${request.codeHash}, ${request.sentAt}, ${request.expiresAt})`;
}

/** Replaces a pending registration of the same address; its old code stops working. */
export async function replaceRegistration(tx: Transaction, id: string, request: RegistrationRequest): Promise<void> {
  await tx`
    UPDATE accounts
    SET name = ${request.name}, email = ${request.email}, phone = ${request.phone}, password_hash = ${request.passwordHash},
        code_hash = ${request.codeHash}, code_sent_at = ${request.sentAt}, code_expires_at = ${request.expiresAt}
    WHERE id = ${id} AND activated_at IS NULL`;
}

/** When the pending registration with this code hash expires, or null if there is none. Reads without a lock. */
export async function findCodeExpiry(sql: Sql, codeHash: Buffer): Promise<Date | null> {
  const [row] = await sql`SELECT code_expires_at FROM accounts WHERE code_hash = ${codeHash} AND activated_at IS NULL`;
  return (row?.code_expires_at as Date | undefined) ?? null;
}

/** Locks the pending registration with this code hash, expired or not. */
export async function lockRegistrationByCode(tx: Transaction, codeHash: Buffer): Promise<PendingRegistration | null> {
  const [row] = await tx<PendingRegistration[]>`
    SELECT id, name, email, code_expires_at AS "expiresAt"
    FROM accounts
    WHERE code_hash = ${codeHash} AND activated_at IS NULL
    FOR UPDATE`;
  return row ?? null;
}

/** Turns a pending registration into an account; the code is erased, so it works once. */
export async function activateRegistration(tx: Transaction, id: string, now: Date): Promise<void> {
  await tx`
    UPDATE accounts SET activated_at = ${now}, code_hash = NULL, code_sent_at = NULL, code_expires_at = NULL
    WHERE id = ${id} AND activated_at IS NULL`;
}

/** Deletes registrations whose code expired before `before`; returns how many. */
export async function deleteExpiredRegistrations(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM accounts WHERE activated_at IS NULL AND code_expires_at < ${before}`;
  return rows.count;
}
