import { loginAccountColumns, type LoginAccount } from '../../core/accounts.ts';
import { hashCode, generateCode } from '../../core/one-time-codes.ts';
import { signInCodeMail } from '../../mail/messages.ts';
import { insertMail, sealMail } from '../../mail/outbox.ts';
import type { Mailer } from '../../mail/templates.ts';
import type { Sql, Transaction } from '../../storage/db.ts';

/** A sign-in code lives ten minutes, counted from the request, as its mail says. */
export const signInCodeTtlSeconds = 600;

/** Records a request for a sign-in code: the same one row for every address (see requestSignInCode). */
export async function recordSignInCodeRequest(
  tx: Transaction, email: string, clientAddress: string, now: Date,
): Promise<void> {
  await tx`
    INSERT INTO sign_in_code_requests (address, client_address, requested_at)
    VALUES (${email}, ${clientAddress.slice(0, 64)}, ${now})`;
}

/**
 * Resolves the oldest waiting request, in one transaction; false when none waits. An active
 * account that is not disabled and has the address gets a new code (its older sign-in codes stop
 * working) and a mail, in one statement; any other address gets nothing.
 */
export async function resolveNextSignInCodeRequest(sql: Sql, mailer: Mailer): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [request] = await tx`
      DELETE FROM sign_in_code_requests
      WHERE id = (SELECT id FROM sign_in_code_requests ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING address, client_address AS "clientAddress", requested_at AS "requestedAt"`;
    if (request === undefined) return false;
    const requestedAt = request.requestedAt as Date;
    const expiresAt = new Date(requestedAt.getTime() + signInCodeTtlSeconds * 1000);
    const code = generateCode();
    const [account] = await tx`
      SELECT locale FROM accounts WHERE lower(email) = lower(${request.address}) AND activated_at IS NOT NULL`;
    const locale = (account?.locale as string | null | undefined) ?? null;
    const mail = sealMail(signInCodeMail(code, expiresAt, requestedAt, request.clientAddress, locale), mailer);
    await tx`
      WITH account AS (
        SELECT id, email FROM accounts
        WHERE lower(email) = lower(${request.address}) AND activated_at IS NOT NULL AND disabled_at IS NULL
        FOR NO KEY UPDATE
      ), older AS (
        DELETE FROM one_time_codes WHERE purpose = 'sign-in' AND account_id IN (SELECT id FROM account)
      ), code AS (
        INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at)
        SELECT ${hashCode(code)}, 'sign-in', id, ${expiresAt}, ${requestedAt} FROM account
      )
      ${insertMail(tx, mail, tx`email`, requestedAt, tx`FROM account`)}`;
    return true;
  });
}

/** The active account with this address that holds this live sign-in code, as sign-in reads it; without using it. */
export async function findCodeAccount(
  sql: Sql, email: string, codeHash: Buffer, now: Date,
): Promise<LoginAccount | null> {
  const [row] = await sql<LoginAccount[]>`
    SELECT ${loginAccountColumns(sql)} FROM one_time_codes c JOIN accounts a ON a.id = c.account_id
    WHERE c.purpose = 'sign-in' AND c.code_hash = ${codeHash} AND c.expires_at > ${now}
      AND lower(a.email) = lower(${email}) AND a.activated_at IS NOT NULL`;
  return row ?? null;
}

/** Uses a sign-in code up without a session: a wrong otp came with it. */
export async function spendSignInCode(sql: Sql, codeHash: Buffer): Promise<void> {
  await sql`DELETE FROM one_time_codes WHERE code_hash = ${codeHash} AND purpose = 'sign-in'`;
}

/** Requests recorded before `before` that no worker resolved: a code issued that late would expire at once. */
export async function deleteStaleSignInCodeRequests(sql: Sql, before: Date): Promise<number> {
  return (await sql`DELETE FROM sign_in_code_requests WHERE requested_at < ${before}`).count;
}
