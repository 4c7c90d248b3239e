import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import { eraseAccount } from '../../core/erasure.ts';
import { actCodeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import type { CallerFactorRefusal } from '../../core/password-check.ts';
import {
  inTransaction, lockAccountIfSessionLives, type Client, type UseCaseDeps,
} from '../../core/transaction.ts';
import { requireProof, useMailbox } from '../../core/proofs.ts';

export type Deletion =
  | { outcome: 'deleted' } | { outcome: 'code-sent' } | { outcome: 'wrong-code' }
  | { outcome: 'refused'; refusal: QuotaRefusal } | CallerFactorRefusal;

/**
 * Erases the account (the right to erasure), in two steps, because a reset cannot undo it: the
 * password (and the factor, when one is active) without `emailCode` mails a code to the
 * account's address, under the account's own quota (once a minute, ten a day); the same with
 * that code erases. The password is throttled like a sign-in, so that a stolen token alone
 * gets nowhere, and a wrong code uses nothing up. The address's code quotas stay (a keyed hash,
 * no address) until the sweep forgets them a day after the last request, so that a stranger who
 * spent them learns nothing from their release.
 */
export async function deleteAccount(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string }, password: string, otp: string | undefined,
  emailCode: string | undefined, client: Client,
): Promise<Deletion> {
  const { account } = caller;
  const check = await requireProof(deps, caller, 'delete-account', { password, otp }, client);
  if (check.outcome !== 'valid') return check;
  if (emailCode === undefined) return mailDeletionCode(deps, caller, client);
  const now = deps.clock();
  const erased = await eraseAccount(deps, account, client.address, async (tx) => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return 'session-ended';
    return (await useMailbox(tx, 'delete-account', account.id, emailCode, now)) ? 'go-on' : 'wrong-code';
  });
  return { outcome: erased === 'go-on' ? 'deleted' : erased };
}

async function mailDeletionCode(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string }, client: Client,
): Promise<Deletion> {
  const { account } = caller;
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + deps.config.emailCodeTtlSeconds * 1000);
  const code = generateCode();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<Deletion> => {
    const refusal = await reserveAddressRequest(tx, 'deletion', accountQuotaKey(deps.keys, account.publicId), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    if (!(await lockAccountIfSessionLives(tx, caller))) return rollBack({ outcome: 'session-ended' });
    await storeCode(tx, 'deletion', account.id, hashCode(code), expiresAt, now);
    const mail = actCodeMail('deletion-code', account, code, expiresAt, now, client.address);
    await enqueueMail(tx, mail, deps.mailer, now);
    return { outcome: 'code-sent' };
  });
  if (result.outcome === 'code-sent') deps.outbox.wake();
  return result;
}
