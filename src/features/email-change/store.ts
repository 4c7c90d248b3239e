import { isSessionLive } from '../../core/sessions.ts';
import type { Transaction } from '../../storage/db.ts';

/** The caller's account as its e-mail change request reads it, locked. */
export type LockedAccount = { id: string; name: string; email: string; locale: string | null };

/**
 * The row that holds `email` for another account: an active account, or a pending registration
 * that has not expired. Null when the address is free (or is the account's own, in another
 * letter case). Read without a lock: locks are taken next, in id order.
 */
export async function findOtherHolder(
  tx: Transaction, accountId: string, email: string, now: Date,
): Promise<string | null> {
  const [row] = await tx`
    SELECT id FROM accounts
    WHERE lower(email) = lower(${email}) AND id <> ${accountId} AND (activated_at IS NOT NULL OR expires_at > ${now})`;
  return (row?.id as string | undefined) ?? null;
}

/**
 * Step 2 of the lock order (core/transaction.ts) for an e-mail change request: locks the
 * caller's account row and, when the new address has a holder, the holder's row too, FOR NO
 * KEY UPDATE and in id order: two accounts that each ask for the other's address lock
 * the same two rows in the same order, so they queue instead of deadlocking. Returns the
 * caller's account if it is still active and `sessionId` still lives, else null. The session is
 * read in a statement of its own, after the lock, so that it sees what a transaction that held
 * the lock before (a password change, a deletion) committed.
 */
export async function lockAccountsForChange(
  tx: Transaction, accountId: string, holderId: string | null, sessionId: string,
): Promise<LockedAccount | null> {
  const locked = await tx`
    SELECT id, name, email, locale, activated_at IS NOT NULL AS active FROM accounts
    WHERE id IN (${accountId}, ${holderId ?? accountId})
    ORDER BY id FOR NO KEY UPDATE`;
  const own = locked.find((row) => row.id === accountId);
  if (own === undefined || own.active !== true) return null;
  if (!(await isSessionLive(tx, accountId, sessionId))) return null;
  return { id: accountId, name: own.name as string, email: own.email as string, locale: own.locale as string | null };
}


/**
 * Gives the locked account its new address, as typed. Another row that holds the address
 * (an account, or a registration that has not expired) makes the update fail on the unique
 * index `accounts_email_key`: the database, not a check, decides which of two concurrent
 * changes to one address wins. An expired registration that holds it is deleted first,
 * since expiry frees an address at once.
 */
export async function setEmail(tx: Transaction, accountId: string, newEmail: string, now: Date): Promise<void> {
  await tx`
    DELETE FROM accounts WHERE lower(email) = lower(${newEmail}) AND activated_at IS NULL AND expires_at <= ${now}`;
  await tx`UPDATE accounts SET email = ${newEmail} WHERE id = ${accountId}`;
}
