import { clearAccountQuotas } from '../../core/address-quotas.ts';
import { clearThrottle, rememberClient } from '../../core/login-throttle.ts';
import { consumeCodes } from '../../core/one-time-codes.ts';
import { resetPasswordHash } from '../../core/reset-codes.ts';
import { noticeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import { clientNetwork } from '../../http/rate-limit.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { resetIdentifier, signedInIdentifier, throttleKeys } from '../../core/password-check.ts';
import { inTransaction, lockAccount, wakeWorkers, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { removeWaysIn } from '../../core/erasure.ts';
import { recordEvent } from '../../core/security-events.ts';

/**
 * Sets a new password with a reset code of `accountId` (found by the caller's code lookup).
 * Every session and every other reset code ends with it. It is also the owner's way back from
 * a sign-in lock-out: the account's throttle is cleared, and the network that completed the
 * reset becomes known to the name and the address, so that the owner signs in from there even
 * while a stranger spends both budgets again (the rest of the throttle still bounds it). Only
 * the mailbox gets a reset code, so a stranger without it gains nothing. False when the code
 * was used first by a concurrent request, or the account is gone.
 */
export async function resetPassword(
  deps: UseCaseDeps, accountId: string, codeHash: Buffer, newPassword: string, client: Client,
  removePasskeys = false,
): Promise<boolean> {
  const passwordHash = await deps.passwords.hash(newPassword);
  const now = deps.clock();
  const reset = await inTransaction(deps.sql, async (tx) => {
    if (!(await lockAccount(tx, accountId))) return null;
    const account = await resetPasswordHash(tx, accountId, passwordHash);
    const webhook = deps.webhooks.event('password.reset', account!.publicId, now);
    const event = { type: 'password-reset', clientAddress: client.address, sessionId: null } as const;
    await endSessions(tx, { accountId, sessionId: null, event, webhook, record: 'always', now });
    // The code is consumed after the account row is locked (the lock order); a code used
    // first by a concurrent request rolls all of this back.
    if (!(await consumeCodes(tx, accountId, 'reset', codeHash, now))) throw codeGone;
    if (removePasskeys) {
      const record = (type: 'passkey-removed' | 'identity-removed') =>
        recordEvent(tx, accountId, type, client.address, null, now);
      await removeWaysIn(tx, deps, account!, now, record);
    }
    await clearThrottle(tx, throttleKeys(deps, account!));
    // Known to the name, the address and the account's own key (the password checks of a session):
    // whoever spends their budgets after the reset, a session's included, the owner gets in from here.
    const own = [account!.name, account!.email, signedInIdentifier(account!), resetIdentifier(account!.email)];
    const identifiers = own.map((identifier) => deps.keys.loginIdentifier(identifier));
    await rememberClient(tx, identifiers, deps.keys.client(clientNetwork(client.address)), now);
    await enqueueMail(tx, noticeMail('password-reset', account!, now, client.address), deps.mailer, now);
    return account!;
  }).catch((error: unknown) => {
    if (error === codeGone) return null;
    throw error;
  });
  if (reset !== null) {
    wakeWorkers(deps);
    // The account's own request quotas start afresh: a thief's ten
    // enrollment or passkey requests a day must not keep the owner who took the account back
    // from adding a factor. After the commit, apart: quota rows come before the account row in
    // the lock order, and a reset holds the account row.
    await clearAccountQuotas(deps.sql, deps.keys, reset.publicId);
  }
  return reset !== null;
}

/** Thrown inside the transaction to roll it back; never leaves this module. */
const codeGone = new Error('the reset code was used by a concurrent request');
