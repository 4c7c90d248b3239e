import { reserveAddressRequest, type QuotaRefusal } from '../accounts/address-quotas.ts';
import { claimAttemptNotice, findOtherHolder, lockAccountsForChange } from '../accounts/email-changes.ts';
import { generateCode, hashCode, storeCode } from '../accounts/one-time-codes.ts';
import { recordEvent } from '../accounts/security-events.ts';
import type { Deps } from '../http/router.ts';
import { emailChangeAttemptMail, emailChangeCodeMail, emailChangeRequestedMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';

export type EmailChangeDeps = Pick<Deps, 'sql' | 'clock' | 'sealer' | 'keys' | 'config'>;

/** A change asked for by a signed-in session whose password was checked already. */
export type EmailChangeRequest = { accountId: string; sessionId: string; newEmail: string; clientAddress: string };

export type EmailChangeRequestResult =
  | { outcome: 'requested' }
  /** The caller's session was ended meanwhile (a concurrent password change, say), or the account deleted. */
  | { outcome: 'session-ended' }
  | { outcome: 'refused'; refusal: QuotaRefusal };

/**
 * Starts an e-mail change: a code for the new address, which replaces any pending change of the
 * account, and a notice to the current address.
 *
 * No oracle: whatever the new address holds, the same statements run and the same rows are
 * written (the quota, the code row with its change, the event, the notice to the current
 * address), and the caller gets the same answer. Only what goes to the new mailbox differs:
 * the code when it is free; when another account or a live registration holds it, at most one
 * "someone tried to use your address" notice an hour to its holder, and the stored code, never
 * mailed, can never be used. The previous pending change ends on both paths, so that whether
 * its code still works tells nothing either.
 *
 * Lock order, the one of every use case: the per-address row (the new address's quota), then
 * account rows FOR NO KEY UPDATE (here the caller's and the holder's, in id order, so that two
 * accounts asking for each other's address queue instead of deadlocking; the holder's notice
 * time is written under that lock), then sessions (read), codes, events, outbox.
 */
export async function requestEmailChange(deps: EmailChangeDeps, request: EmailChangeRequest): Promise<EmailChangeRequestResult> {
  const { accountId, sessionId, newEmail, clientAddress } = request;
  const now = deps.clock();
  const code = generateCode();
  const expiresAt = new Date(now.getTime() + deps.config.emailCodeTtlSeconds * 1000);
  return deps.sql.begin(async (tx): Promise<EmailChangeRequestResult> => {
    // Counted whatever the address holds, so that a cooldown or a cap never tells them apart.
    const refusal = await reserveAddressRequest(tx, 'email-change', deps.keys.address(newEmail), now);
    if (refusal !== null) return { outcome: 'refused', refusal };
    const holderId = await findOtherHolder(tx, accountId, newEmail, now);
    const account = await lockAccountsForChange(tx, accountId, holderId, sessionId);
    if (account === null) return { outcome: 'session-ended' };

    const notice = await claimAttemptNotice(tx, holderId, newEmail, now);
    await storeCode(tx, 'email-change', accountId, hashCode(code), expiresAt, now, { newEmail, sessionId });
    await recordEvent(tx, accountId, 'email-change-requested', clientAddress, sessionId, now);
    await enqueueMail(tx, emailChangeRequestedMail(account.email, account.name, newEmail, now, clientAddress), deps.sealer, now);
    if (holderId === null) {
      await enqueueMail(tx, emailChangeCodeMail(newEmail, account.name, code, expiresAt, now), deps.sealer, now);
    } else if (notice !== null) {
      // To the address as its holder stored it, not as the caller typed it.
      await enqueueMail(tx, emailChangeAttemptMail(notice.email, notice.name, notice.pending), deps.sealer, now);
    }
    return { outcome: 'requested' };
  });
}
