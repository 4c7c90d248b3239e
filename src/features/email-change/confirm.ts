import { setEmail } from './store.ts';
import { forgetKnownClients, rememberClient } from '../../core/login-throttle.ts';
import { consumeCodes, deleteCodes, findEmailChange } from '../../core/one-time-codes.ts';
import { emailChangedMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import { isUniqueViolation } from '../../storage/database-errors.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { inTransaction, lockAccount, wakeWorkers, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { useMailbox } from '../../core/proofs.ts';
import { resetIdentifier } from '../../core/password-check.ts';
import { clientNetwork } from '../../http/rate-limit.ts';

/** The account a live e-mail change code belongs to, as the code lookup found it. */
export type ChangingAccount = { id: string; publicId: string; name: string; email: string; locale: string | null };

export type EmailChangeConfirmation =
  | { outcome: 'changed' }
  /** Used first by a concurrent request, replaced by a newer request, or ended with the session that asked. */
  | { outcome: 'unknown-code' }
  /** Another account or registration took the address after the code was sent. */
  | { outcome: 'address-taken' };

/**
 * Confirms an e-mail change with the code mailed to the new address (found by the caller's code
 * lookup) and the one mailed to the current address. In one transaction: the account takes the
 * new address as typed at the request, every session but the one that asked ends, both codes
 * are used up, reset codes mailed to the old
 * address stop working, the networks known to the old address for sign-in are forgotten, the
 * event is recorded and the old address is told, with the new one
 * partly masked, and the application's webhook `account.email_changed` is queued. Sign-in by
 * the new address works at once, and by the old one no longer.
 *
 * Only whoever reads the new mailbox holds the code, so only they can learn that the address
 * was taken meanwhile ('address-taken'). The unique index on lower(email) decides that, not a
 * check, so of two accounts confirming one address at once exactly one wins; the loser's
 * transaction, its code included, is rolled back, and the code works until it expires.
 *
 * Lock order (transaction.ts): the account row (and an expired registration that holds the new
 * address, deleted before the update), then sessions, codes, events, outbox.
 */
export async function changeEmail(
  deps: UseCaseDeps, account: ChangingAccount, codeHash: Buffer, currentCode: string, client: Client,
): Promise<EmailChangeConfirmation> {
  const now = deps.clock();
  try {
    return await inTransaction(deps.sql, async (tx): Promise<EmailChangeConfirmation> => {
      if (!(await lockAccount(tx, account.id))) return { outcome: 'unknown-code' };
      // Read after the lock: a concurrent confirmation or a newer request waited for it, or won.
      // The address the lookup found is still the account's: only this code could change it.
      const change = await findEmailChange(tx, account.id, codeHash, now);
      if (change === null) return { outcome: 'unknown-code' };
      await setEmail(tx, account.id, change.newEmail, now);
      await endSessions(tx, {
        accountId: account.id,
        sessionId: null,
        keptSessionId: change.sessionId,
        event: { type: 'email-changed', clientAddress: client.address, sessionId: change.sessionId },
        webhook: deps.webhooks.event('account.email_changed', account.publicId, now, { email: change.newEmail }),
        record: 'always',
        now,
      });
      // Only the end of the kept session (which takes its code along) can come between the
      // read and this; the change is then rolled back as a whole.
      if (!(await consumeCodes(tx, account.id, 'email-change', codeHash, now))) throw codeGone;
      // The code mailed to the current address: a wrong one rolls everything back, both codes included.
      if (!(await useMailbox(tx, 'change-address', account.id, currentCode, now))) throw codeGone;
      // A reset code mailed to the old address must not open the account any more.
      await deleteCodes(tx, account.id, 'reset');
      const leaving = [account.email, resetIdentifier(account.email)];
      await forgetKnownClients(tx, leaving.map((identifier) => deps.keys.loginIdentifier(identifier)));
      // The network that proved both mailboxes may reset the new address past a stranger's spent quota.
      const resets = deps.keys.loginIdentifier(resetIdentifier(change.newEmail));
      await rememberClient(tx, [resets], deps.keys.client(clientNetwork(client.address)), now);
      const notice = emailChangedMail(account, change.newEmail, now, client.address);
      await enqueueMail(tx, notice, deps.mailer, now);
      return { outcome: 'changed' };
    }).then((result) => {
      if (result.outcome === 'changed') wakeWorkers(deps);
      return result;
    });
  } catch (error) {
    if (error === codeGone) return { outcome: 'unknown-code' };
    if (isUniqueViolation(error, 'accounts_email_key')) return { outcome: 'address-taken' };
    throw error;
  }
}

/** Thrown inside the transaction to roll it back; never leaves this module. */
const codeGone = new Error('the e-mail change code ended with its session meanwhile');
