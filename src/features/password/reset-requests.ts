import type { Sql, Transaction } from '../../storage/db.ts';
import { resetCodeMail } from '../../mail/messages.ts';
import { sealMail } from '../../mail/outbox.ts';
import type { Mailer } from '../../mail/templates.ts';
import { generateCode, hashCode } from '../../core/one-time-codes.ts';
import { issueResetCode } from '../../core/reset-codes.ts';

/**
 * A password reset request is answered after it is only recorded: the same one row for every
 * address, so that neither the answer nor its timing nor the rows it writes tell whether the
 * address has an account. The worker (request-resolver.ts) resolves it moments later, after a
 * random delay, and only then is a code issued and mailed to an account that has the address.
 */
export async function recordResetRequest(
  tx: Transaction, email: string, clientAddress: string, now: Date,
): Promise<void> {
  await tx`
    INSERT INTO reset_requests (address, client_address, requested_at)
    VALUES (${email}, ${clientAddress.slice(0, 64)}, ${now})`;
}

/**
 * Deletes requests recorded before `before` that no worker resolved (the database was away, or
 * every instance stopped): a code issued that late would expire at once. Returns how many.
 */
export async function deleteStaleResetRequests(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM reset_requests WHERE requested_at < ${before}`;
  return rows.count;
}

/** Resolves the oldest waiting request, in one transaction; false when none waits. */
export async function resolveNextResetRequest(sql: Sql, mailer: Mailer, codeTtlSeconds: number): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [request] = await tx`
      DELETE FROM reset_requests WHERE id = (SELECT id FROM reset_requests ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING address, client_address, requested_at`;
    if (request === undefined) return false;
    const requestedAt = request.requested_at as Date;
    const clientAddress = request.client_address as string;
    // The code's life counts from the request, as the message says.
    const expiresAt = new Date(requestedAt.getTime() + codeTtlSeconds * 1000);
    const code = generateCode();
    // The mail is in the account's locale, read here by the worker, after the answer: the same
    // statement runs for every address, and no request times it (see recordResetRequest).
    const [account] = await tx`
      SELECT locale FROM accounts WHERE lower(email) = lower(${request.address}) AND activated_at IS NOT NULL`;
    const locale = (account?.locale as string | null | undefined) ?? null;
    const mail = sealMail(resetCodeMail(code, expiresAt, requestedAt, clientAddress, locale), mailer);
    await issueResetCode(tx, request.address as string, hashCode(code), expiresAt, mail, clientAddress, requestedAt);
    return true;
  });
}
