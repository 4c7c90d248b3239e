import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { findOtherHolder, lockAccountsForChange } from './store.ts';
import { claimAttemptNotice } from '../../core/accounts.ts';
import { generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import { recordEvent } from '../../core/security-events.ts';
import { emailChangeAttemptMail, emailChangeCodeMail, emailChangeRequestedMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import type { CallerFactorRefusal } from '../../core/password-check.ts';
import { useSecondFactor } from '../../core/factor.ts';
import { inTransaction, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { requireProof } from '../../core/proofs.ts';

export type EmailChangeRequest =
  | { outcome: 'requested' } | { outcome: 'refused'; refusal: QuotaRefusal } | CallerFactorRefusal;

/**
 * Starts an e-mail change: a code for the new address, which replaces any pending change of the
 * account, and a notice with a second code to the current address: the confirmation needs both
 * mailboxes, so that a password alone cannot move the account to a thief's. The password is
 * checked under the throttle of the account itself, as for a password change, so that a stolen
 * token alone cannot move it.
 *
 * No oracle: whatever the new address holds, the same statements run and the same rows are
 * written (the quota, the code row with its change, the event, the notice to the current
 * address), and the caller gets the same answer. Only what goes to the new mailbox differs:
 * the code when it is free; when another account or a live registration holds it, at most one
 * "someone tried to use your address" notice an hour to its holder, and the stored code, never
 * mailed, can never be used. The previous pending change ends on both paths, so that whether
 * its code still works tells nothing either.
 *
 * Lock order (transaction.ts): the quota rows (the account's own, then the new address's), then
 * account rows FOR NO KEY UPDATE (the caller's and the holder's, in id order, so that two accounts
 * asking for each other's address queue instead of deadlocking; the holder's notice time is
 * written under that lock), then sessions (read), codes, events, outbox.
 *
 * The code goes to an address that holds no account, in `requestLocale` (Accept-Language)
 * or else the account's; a holder's notice is in the holder's own.
 */
export async function requestEmailChange(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string }, password: string, otp: string | undefined,
  newEmail: string, client: Client, requestLocale: string | null,
): Promise<EmailChangeRequest> {
  const { account, sessionId } = caller;
  // With an active second factor, an otp is needed too, checked once the password is proven and
  // under the same throttle: the address is how a reset reaches the account, so a stolen
  // password and token alone must not move it.
  const check = await requireProof(deps, caller, 'change-address', { password, otp }, client);
  if (check.outcome !== 'valid') return check;

  const now = deps.clock();
  const code = generateCode();
  const currentCode = generateCode();
  const expiresAt = new Date(now.getTime() + deps.config.emailCodeTtlSeconds * 1000);
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<EmailChangeRequest> => {
    // The account's own quota first (a purpose of its own, keyed by its public id): every
    // request mails a notice to the current address and writes an event, so the account may ask
    // once a minute and ten times a day, whatever new address it names. Then the new address's
    // quota, counted whatever the address holds, so that a cooldown or a cap never tells them
    // apart. Both rows are step 1 of the lock order, the account's first: only its own requests
    // take it. A refusal rolls back, so that a refused request spends nothing of the other quota.
    const ownKey = accountQuotaKey(deps.keys, account.publicId);
    const own = await reserveAddressRequest(tx, 'account-email-change', ownKey, now);
    if (own !== null) return rollBack({ outcome: 'refused', refusal: own });
    const refusal = await reserveAddressRequest(tx, 'email-change', deps.keys.address(newEmail), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    const holderId = await findOtherHolder(tx, account.id, newEmail, now);
    const locked = await lockAccountsForChange(tx, account.id, holderId, sessionId);
    // A request that lost a race to a sign-out spends neither quota.
    if (locked === null) return rollBack({ outcome: 'session-ended' });
    const used = await useSecondFactor(tx, deps, account, check.proof, client.address, sessionId, now);
    if (!used) return rollBack({ outcome: 'wrong-otp' });

    const notice = await claimAttemptNotice(tx, holderId, newEmail, now);
    await storeCode(tx, 'email-change', account.id, hashCode(code), expiresAt, now, { newEmail, sessionId });
    // The current mailbox must agree too: a password alone must not move the account away from it.
    await storeCode(tx, 'email-change-current', account.id, hashCode(currentCode), expiresAt, now);
    await recordEvent(tx, account.id, 'email-change-requested', client.address, sessionId, now);
    const requested = emailChangeRequestedMail(locked, newEmail, currentCode, expiresAt, now, client.address);
    await enqueueMail(tx, requested, deps.mailer, now);
    if (holderId === null) {
      const to = { email: newEmail, name: locked.name, locale: requestLocale ?? locked.locale };
      await enqueueMail(tx, emailChangeCodeMail(to, code, expiresAt, now), deps.mailer, now);
    } else if (notice !== null) {
      // To the address as its holder stored it, not as the caller typed it.
      await enqueueMail(tx, emailChangeAttemptMail(notice, notice.pending), deps.mailer, now);
    }
    return { outcome: 'requested' };
  });
  // Not at once: see wakeLater. What the new mailbox gets depends on what the address holds,
  // and its sending must not be timed from this request.
  if (result.outcome === 'requested') deps.outbox.wakeLater();
  return result;
}
