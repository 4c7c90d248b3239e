import type { Transaction } from '../storage/db.ts';

/**
 * The disabled state of an account (sql/021). Written only by features/operators/disable.ts, in
 * the transaction that holds the account row and ends every session: a disabled account has no
 * session, and startSession refuses to start one (core/sessions.ts), so no token of it works.
 */

/** Marks the account disabled with the operator's reason; false if it was disabled already. */
export async function markDisabled(tx: Transaction, id: string, reason: string, now: Date): Promise<boolean> {
  const rows = await tx`
    UPDATE accounts SET disabled_at = ${now}, disabled_reason = ${reason} WHERE id = ${id} AND disabled_at IS NULL`;
  return rows.count === 1;
}

/** Clears the disabled state; false if the account was not disabled. */
export async function markEnabled(tx: Transaction, id: string): Promise<boolean> {
  const rows = await tx`
    UPDATE accounts SET disabled_at = NULL, disabled_reason = NULL WHERE id = ${id} AND disabled_at IS NOT NULL`;
  return rows.count === 1;
}
