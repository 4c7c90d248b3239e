import type { Account } from '../accounts/accounts.ts';
import { throttleDeletionStatements } from '../accounts/login-throttle.ts';
import { accountDeletedMail } from '../mail/messages.ts';
import { insertMail, sealMail } from '../mail/outbox.ts';
import { endSessions } from './end-sessions.ts';
import { throttleKeys, type CallerFactorRefusal } from './password-check.ts';
import { checkPasswordAndFactor } from './second-factor.ts';
import type { Transaction } from '../storage/db.ts';
import type { WebhookData } from '../webhooks/events.ts';
import { inTransaction, lockAccountIfSessionLives, wakeWorkers, type Client, type UseCaseDeps } from './transaction.ts';

export type Deletion = { outcome: 'deleted' } | CallerFactorRefusal;

/**
 * Erases the account (the right to erasure). The current password is required and throttled
 * like a sign-in, so that a stolen token alone cannot delete an account. In one transaction the
 * account and everything of it go (sessions, codes, events by cascade; its throttle rows, its
 * name holds and its past mail by key), so that its name and address are free at once; only the
 * notice queued here stays, until it is sent. The address's code quotas stay (a keyed hash,
 * no address), until the sweep forgets them a day after the last request: released at the
 * deletion, they told a stranger who had spent them that the address had an account, and when
 * it went (found by an outside tester).
 */
export async function deleteAccount(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string }, password: string, otp: string | undefined,
  client: Client,
): Promise<Deletion> {
  const { account } = caller;
  // Second factor (issue 23): with an active factor, an otp is needed too, checked once the password is proven.
  const check = await checkPasswordAndFactor(deps, caller, password, otp, client);
  if (check.outcome !== 'valid') return check;
  if (!(await eraseAccount(deps, account, client.address, (tx) => lockAccountIfSessionLives(tx, caller)))) {
    return { outcome: 'session-ended' };
  }
  return { outcome: 'deleted' };
}

/**
 * THE erasure, for the owner (above) and the operator (operator-actions.ts): `lock` takes step 2
 * of the lock order, and says whether to go on (the caller's session lives, the account is
 * there). The webhook's `data` tells the application who acted, and `clientAddress` null tells
 * the owner's notice that an operator did. False if `lock` refused.
 */
export async function eraseAccount(
  deps: UseCaseDeps,
  account: Pick<Account, 'id' | 'publicId' | 'name' | 'email' | 'locale'>,
  clientAddress: string | null,
  lock: (tx: Transaction) => Promise<boolean>,
  data: WebhookData = {},
): Promise<boolean> {
  const now = deps.clock();
  const identifiers = throttleKeys(deps, account);
  const notice = sealMail(accountDeletedMail(account, now, clientAddress), deps.mailer);
  const deleted = await inTransaction(deps.sql, async (tx) => {
    // Step 1 of the lock order: the address's name holds, before the account row, as a code request takes them.
    await tx`SELECT 1 FROM name_holds WHERE address = lower(${account.email}) FOR UPDATE`;
    if (!(await lock(tx))) return false;
    // No event: the account's events go with it. The application is told all the same.
    const webhook = deps.webhooks.event('account.deleted', account.publicId, now, data);
    await endSessions(tx, { accountId: account.id, sessionId: null, event: null, webhook, record: 'always', now });
    await tx`
      WITH account AS (DELETE FROM accounts WHERE id = ${account.id}),
        holds AS (DELETE FROM name_holds WHERE address = lower(${account.email})),
        ${throttleDeletionStatements(tx, identifiers)},
        mail AS (DELETE FROM outbox WHERE lower(recipient) = lower(${account.email}))
      ${insertMail(tx, notice, tx`${account.email}::text`, now)}`;
    return true;
  });
  if (!deleted) return false;
  deps.metrics.increment('accounts_deleted_total');
  wakeWorkers(deps);
  return true;
}
