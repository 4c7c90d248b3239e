import type { Sql, Transaction } from '../../storage/db.ts';

export type NewRegistration = {
  name: string; email: string; phone: string | null; passwordHash: string; expiresAt: Date; locale: string | null;
};

/**
 * What holds the address: nothing, an active account, or a pending registration. `email` is
 * the address as stored, which is where mail about it goes, whatever spelling a caller typed.
 */
export type AddressHolder =
  | { active: true; id: string; name: string; email: string; locale: string | null; attemptNotifiedAt: Date | null }
  | { active: false; id: string; name: string; email: string; locale: string | null; expiresAt: Date }
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
 * Claims the name for the address until `expiresAt`, or says it is taken: by an active
 * account, or by a live hold of another address (name_holds, sql/007 and sql/026; `addressKey`
 * is the address's keyed hash, which a deleted account's hold keeps). Every request that
 * passes its checks holds its name, whatever the address holds, so that what a later request
 * for the name is answered never depends on the state of this address. A hold the address
 * already has is kept as it is, not extended. The unique index on accounts still decides a
 * race between two new registrations.
 */
export async function claimName(
  tx: Transaction, name: string, email: string, addressKey: Buffer, expiresAt: Date, now: Date,
): Promise<boolean> {
  const [active] = await tx`
    SELECT EXISTS (SELECT 1 FROM accounts WHERE name = ${name} AND activated_at IS NOT NULL) AS taken`;
  if (active!.taken as boolean) return false;
  const claimed = await tx`
    INSERT INTO name_holds AS h (name, address, expires_at) VALUES (${name}, lower(${email}), ${expiresAt})
    ON CONFLICT (name) DO UPDATE SET address = excluded.address, address_key = NULL, expires_at = excluded.expires_at
    WHERE h.expires_at <= ${now}
    RETURNING 1`;
  if (claimed.count === 1) return true;
  const [hold] = await tx`
    SELECT address = lower(${email}) OR address_key = ${addressKey} AS own FROM name_holds WHERE name = ${name}`;
  return hold?.own === true;
}

/** Deletes holds that have expired; returns how many. */
export async function deleteExpiredNameHolds(sql: Sql, now: Date): Promise<number> {
  const rows = await sql`DELETE FROM name_holds WHERE expires_at <= ${now}`;
  return rows.count;
}

/** Locks and returns what holds the address, so that concurrent requests for it queue up. */
export async function lockAddressHolder(tx: Transaction, email: string): Promise<AddressHolder> {
  const [row] = await tx`
    SELECT id, name, email, locale, activated_at, expires_at, attempt_notified_at
    FROM accounts WHERE lower(email) = lower(${email}) FOR NO KEY UPDATE`;
  if (row === undefined) return null;
  const { id, name, locale } = row as { id: string; name: string; locale: string | null };
  return row.activated_at === null
    ? { active: false, id, name, email: row.email, locale, expiresAt: row.expires_at }
    : { active: true, id, name, email: row.email, locale, attemptNotifiedAt: row.attempt_notified_at };
}

/** Records that the owner of an active account was told of a registration attempt. */
export async function recordAttemptNotice(tx: Transaction, id: string, now: Date): Promise<void> {
  await tx`UPDATE accounts SET attempt_notified_at = ${now} WHERE id = ${id}`;
}

/**
 * Inserts a pending registration and returns its id; null, inserting nothing, when another row
 * has the name or the address (the unique indexes decide, never a check before the insert).
 */
export async function insertRegistration(tx: Transaction, registration: NewRegistration): Promise<string | null> {
  const [row] = await tx`
    INSERT INTO accounts (name, email, phone, password_hash, expires_at, locale)
    VALUES (${registration.name}, ${registration.email}, ${registration.phone}, ${registration.passwordHash},
      ${registration.expiresAt}, ${registration.locale})
    ON CONFLICT DO NOTHING
    RETURNING id`;
  return (row?.id as string | undefined) ?? null;
}

/** Deletes registrations that expired before `before`, with their codes; returns how many. */
export async function deleteExpiredRegistrations(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM accounts WHERE activated_at IS NULL AND expires_at < ${before}`;
  return rows.count;
}
