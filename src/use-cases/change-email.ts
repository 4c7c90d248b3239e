import { lockAccount, setEmail } from '../accounts/email-changes.ts';
import { consumeCode, deleteCodes, findCode, findEmailChange, hashCode } from '../accounts/one-time-codes.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { emailChangedMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { endSessionsExcept } from '../sessions/sessions.ts';
import { isUniqueViolation } from '../storage/db.ts';
import type { EmailChangeDeps } from './request-email-change.ts';

export type ChangeEmailResult =
  | { outcome: 'changed' }
  /** Never issued, used, replaced by a newer request, or ended with the session that asked. */
  | { outcome: 'unknown-code' }
  | { outcome: 'expired' }
  /** Another account or registration took the address after the code was sent. */
  | { outcome: 'address-taken' };

/**
 * Confirms an e-mail change with the code mailed to the new address. In one transaction: the
 * code is used up, the account takes the new address (as typed at the request), every session
 * but the one that asked ends, reset codes mailed to the old address stop working, the event is
 * recorded and the old address is told, with the new one partly masked. Sign-in by the new
 * address works at once, and by the old one no longer.
 *
 * Only whoever reads the new mailbox holds the code, so only they can learn that the address
 * was taken meanwhile ('address-taken'). The unique index on lower(email) decides that, and of
 * two accounts confirming one address at once exactly one wins; the loser's transaction,
 * code included, is rolled back, and its code keeps working until it expires.
 *
 * Lock order, the one of every use case: the account row FOR NO KEY UPDATE (and an expired
 * registration that holds the new address, deleted with it), then sessions, codes, events,
 * outbox.
 */
export async function changeEmail(deps: EmailChangeDeps, code: string, clientAddress: string): Promise<ChangeEmailResult> {
  const codeHash = hashCode(code);
  // Unknown and expired codes, what guessing produces, cost one read and no transaction.
  const found = await findCode(deps.sql, 'email-change', codeHash);
  if (found === null) return { outcome: 'unknown-code' };
  const now = deps.clock();
  if (found.expiresAt <= now) return { outcome: 'expired' };
  try {
    return await deps.sql.begin(async (tx): Promise<ChangeEmailResult> => {
      const account = await lockAccount(tx, found.accountId);
      // Read after the lock: a concurrent confirmation or a newer request waited for it, or won.
      const change = account === null ? null : await findEmailChange(tx, account.id, codeHash, now);
      if (account === null || change === null) return { outcome: 'unknown-code' };
      await setEmail(tx, account.id, change.newEmail, now);
      await endSessionsExcept(tx, account.id, change.sessionId);
      // Only the end of the kept session (which takes its code along) can come between the read
      // and this; the change is then undone as a whole.
      if ((await consumeCode(tx, 'email-change', codeHash, now)) === null) throw new CodeGoneMeanwhile();
      // A reset code mailed to the old address must not open the account any more.
      await deleteCodes(tx, account.id, 'reset');
      await recordEvent(tx, account.id, 'email-changed', clientAddress, change.sessionId, now);
      await enqueueMail(tx, emailChangedMail(account.email, account.name, change.newEmail, now, clientAddress), deps.sealer, now);
      return { outcome: 'changed' };
    });
  } catch (error) {
    if (error instanceof CodeGoneMeanwhile) return { outcome: 'unknown-code' };
    if (isUniqueViolation(error, 'accounts_email_key')) return { outcome: 'address-taken' };
    throw error;
  }
}

/** Thrown inside the transaction only to roll it back. */
class CodeGoneMeanwhile extends Error {}
