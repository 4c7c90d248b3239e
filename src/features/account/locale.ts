import type { UseCaseDeps } from '../../core/transaction.ts';

/**
 * The owner's choice of the locale of its mail: every mail to the account uses it from now on.
 * One statement on the account row, so it needs no lock of its own; false if the account is gone.
 */
export async function setAccountLocale(deps: UseCaseDeps, accountId: string, locale: string | null): Promise<boolean> {
  const rows = await deps.sql`
    UPDATE accounts SET locale = ${locale} WHERE id = ${accountId} AND activated_at IS NOT NULL`;
  return rows.count === 1;
}
