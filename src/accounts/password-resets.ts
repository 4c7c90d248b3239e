import type { Transaction } from '../storage/db.ts';
import type { SealedMail } from '../mail/outbox.ts';

export type ResetAccount = { id: string; publicId: string; name: string; email: string };

/**
 * Issues a reset code to the active account with this address, if there is one, and queues
 * the sealed message to the address stored for it. The reset-request worker calls it
 * (reset-requests.ts), never the request itself: how many rows it writes tells whether the
 * address has an account. (The same inserts as storeCode in one-time-codes.ts, recordEvent in
 * security-events.ts and enqueueMail in mail/outbox.ts, in one statement.)
 */
export async function issueResetCode(tx: Transaction, email: string, codeHash: Buffer, expiresAt: Date, mail: SealedMail, clientAddress: string, now: Date): Promise<void> {
  await tx`
    WITH account AS (
      SELECT id, email FROM accounts WHERE lower(email) = lower(${email}) AND activated_at IS NOT NULL FOR NO KEY UPDATE
    ), older_codes AS (
      DELETE FROM one_time_codes WHERE purpose = 'reset' AND account_id IN (SELECT id FROM account)
    ), code AS (
      INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at)
      SELECT ${codeHash}, 'reset', id, ${expiresAt}, ${now} FROM account
    ), event AS (
      INSERT INTO security_events (account_id, type, occurred_at, client_address)
      SELECT id, 'reset-requested', ${now}, ${clientAddress.slice(0, 64)} FROM account
    )
    INSERT INTO outbox (message_id, kind, recipient, sealed_content, next_attempt_at, created_at)
    SELECT ${mail.messageId}, ${mail.kind}, email, ${mail.sealed}, ${now}, ${now} FROM account`;
}

/** Sets a new password on an active account. Null if the account is gone. */
export async function resetPasswordHash(tx: Transaction, id: string, passwordHash: string): Promise<ResetAccount | null> {
  const [row] = await tx<ResetAccount[]>`
    UPDATE accounts SET password_hash = ${passwordHash}
    WHERE id = ${id} AND activated_at IS NOT NULL
    RETURNING id, public_id AS "publicId", name, email`;
  return row ?? null;
}
