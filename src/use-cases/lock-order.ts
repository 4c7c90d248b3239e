import type { Transaction } from '../storage/db.ts';

/**
 * The one lock order of every transaction that touches an account, so that no two of them can
 * deadlock. Each use case takes, in this order, only the locks it needs:
 *
 *   1. the account row, FOR NO KEY UPDATE (lockAccount);
 *   2. sessions;
 *   3. refresh tokens;
 *   4. codes (one-time codes, the second factor and its recovery codes);
 *   5. security events;
 *   6. the outbox.
 *
 * FOR NO KEY UPDATE, not FOR UPDATE: rows that refer to the account (sessions, events) can still
 * be inserted meanwhile, as their foreign-key check takes only FOR KEY SHARE.
 */
export async function lockAccount(tx: Transaction, accountId: string): Promise<boolean> {
  const rows = await tx`SELECT 1 FROM accounts WHERE id = ${accountId} AND activated_at IS NOT NULL FOR NO KEY UPDATE`;
  return rows.count === 1;
}
