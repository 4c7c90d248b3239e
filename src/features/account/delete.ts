import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { throttleDeletionStatements } from '../../core/login-throttle.ts';
import { consumeCodes, generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import { holdName } from '../registration/store.ts';
import { accountDeletedMail, deletionCodeMail } from '../../mail/messages.ts';
import { enqueueMail, insertMail, sealMail } from '../../mail/outbox.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { throttleKeys, type CallerFactorRefusal } from '../../core/password-check.ts';
import { checkPasswordAndFactor } from '../../core/factor.ts';
import type { Transaction } from '../../storage/db.ts';
import type { WebhookData } from '../../webhooks/events.ts';
import {
  inTransaction, lockAccountIfSessionLives, wakeWorkers, type Client, type UseCaseDeps,
} from '../../core/transaction.ts';

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
  const check = await checkPasswordAndFactor(deps, caller, password, otp, client);
  if (check.outcome !== 'valid') return check;
  if (emailCode === undefined) return mailDeletionCode(deps, caller, client);
  const now = deps.clock();
  const codeHash = hashCode(emailCode);
  const erased = await eraseAccount(deps, account, client.address, async (tx) => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return 'session-ended';
    return (await consumeCodes(tx, account.id, 'deletion', codeHash, now)) ? 'go-on' : 'wrong-code';
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
    await enqueueMail(tx, deletionCodeMail(account, code, expiresAt, now, client.address), deps.mailer, now);
    return { outcome: 'code-sent' };
  });
  if (result.outcome === 'code-sent') deps.outbox.wake();
  return result;
}

/**
 * THE erasure, for the owner (above) and the operator (operator-actions.ts): `lock` takes step 2
 * of the lock order, and says whether to go on ('go-on') or why not, which is returned and
 * rolls everything back. The webhook's `data` tells the application who acted, and
 * `clientAddress` null tells the owner's notice that an operator did. The account's name stays
 * held for its address for NAME_HOLD_DAYS (a keyed hash of the address, nothing else), so that
 * whoever deleted it cannot hand the name to another address.
 */
export async function eraseAccount<Refusal extends string>(
  deps: UseCaseDeps,
  account: Pick<Account, 'id' | 'publicId' | 'name' | 'email' | 'locale'>,
  clientAddress: string | null,
  lock: (tx: Transaction) => Promise<'go-on' | Refusal>,
  data: WebhookData = {},
): Promise<'go-on' | Refusal> {
  const now = deps.clock();
  const identifiers = throttleKeys(deps, account);
  const holdDays = deps.config.nameHoldDays;
  const notice = sealMail(accountDeletedMail(account, now, clientAddress, holdDays), deps.mailer);
  const outcome = await inTransaction(deps.sql, async (tx, rollBack): Promise<'go-on' | Refusal> => {
    // Step 1 of the lock order: the address's name holds, before the account row, as a code request takes them.
    await tx`SELECT 1 FROM name_holds WHERE address = lower(${account.email}) FOR UPDATE`;
    const locked = await lock(tx);
    if (locked !== 'go-on') return rollBack(locked);
    // No event: the account's events go with it. The application is told all the same.
    const webhook = deps.webhooks.event('account.deleted', account.publicId, now, data);
    await endSessions(tx, { accountId: account.id, sessionId: null, event: null, webhook, record: 'always', now });
    await tx`
      WITH account AS (DELETE FROM accounts WHERE id = ${account.id}),
        holds AS (DELETE FROM name_holds WHERE address = lower(${account.email})),
        ${throttleDeletionStatements(tx, identifiers)},
        mail AS (DELETE FROM outbox WHERE lower(recipient) = lower(${account.email}))
      ${insertMail(tx, notice, tx`${account.email}::text`, now)}`;
    if (holdDays > 0) await holdName(tx, account.name, deps.keys.address(account.email), now, holdDays);
    return 'go-on';
  });
  if (outcome !== 'go-on') return outcome;
  deps.metrics.increment('accounts_deleted_total');
  wakeWorkers(deps);
  return outcome;
}
