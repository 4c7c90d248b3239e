import type { Transaction } from '../storage/db.ts';
import { insertMail, type SealedMail } from '../mail/outbox.ts';
import { insertEvents } from './security-events.ts';

export type ResetAccount = { id: string; publicId: string; name: string; email: string; locale: string | null };

/**
 * Issues a reset code to the active account with this address, if there is one and it is not
 * disabled, and queues the sealed message to the address stored for it; whether it did. Its
 * live codes stay valid, so that a stranger's request cannot void the owner's code; the quotas
 * bound how many there are (features/password/request-reset.ts), and using one uses up all. A
 * disabled account gets no code from anyone: while an operator holds it, nobody sets the
 * password it will have when enabled. The reset-request worker calls it (features/password/reset-requests.ts),
 * never the request itself: how many rows it writes tells whether the address has an account.
 * (storeCode's insert, in one-time-codes.ts, and the event's and the mail's, in one statement.)
 * `requested` false: an operator's forced reset, which records its own event, not the owner's request.
 */
export async function issueResetCode(
  tx: Transaction, email: string, codeHash: Buffer, expiresAt: Date, mail: SealedMail, clientAddress: string, now: Date,
  requested = true,
): Promise<boolean> {
  const event = { account: tx`id`, type: 'reset-requested', clientAddress, session: null, now } as const;
  const written = await tx`
    WITH account AS (
      SELECT id, email FROM accounts
      WHERE lower(email) = lower(${email}) AND activated_at IS NOT NULL AND disabled_at IS NULL FOR NO KEY UPDATE
    ), expired_codes AS (
      DELETE FROM one_time_codes WHERE purpose = 'reset' AND account_id IN (SELECT id FROM account)
        AND expires_at <= ${now}
    ), code AS (
      INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at)
      SELECT ${codeHash}, 'reset', id, ${expiresAt}, ${now} FROM account
    )${requested ? tx`, event AS (${insertEvents(tx, event, tx`FROM account`)})` : tx``}
    ${insertMail(tx, mail, tx`email`, now, tx`FROM account`)}`;
  return written.count === 1;
}

/**
 * Sets a new password on an active account, voids every code it has pending (a sign-in code
 * asked for by whoever read the mailbox included), forgets the networks and clients its sign-ins
 * came from, and turns its sign-in notices on again: the owner takes the account back, and
 * nothing a thief set in motion or made known outlives it. Null if the account is gone. Its
 * reset codes are the caller's to use up (one-time-codes.ts consumeCodes). The codes go before
 * the caller ends the sessions: every writer of either holds the account row.
 */
export async function resetPasswordHash(
  tx: Transaction, id: string, passwordHash: string,
): Promise<ResetAccount | null> {
  const [row] = await tx<ResetAccount[]>`
    WITH voided AS (DELETE FROM one_time_codes WHERE account_id = ${id} AND purpose <> 'reset'),
      forgotten AS (DELETE FROM sign_in_clients WHERE account_id = ${id})
    UPDATE accounts SET password_hash = ${passwordHash}, sign_in_notices = true
    WHERE id = ${id} AND activated_at IS NOT NULL
    RETURNING id, public_id AS "publicId", name, email, locale`;
  return row ?? null;
}
