import type { Account } from './accounts.ts';
import { endSessions } from './end-sessions.ts';
import { throttleDeletionStatements } from './login-throttle.ts';
import { throttleKeys } from './password-check.ts';
import { inTransaction, wakeWorkers, type UseCaseDeps } from './transaction.ts';
import { accountDeletedMail } from '../mail/messages.ts';
import { insertMail, sealMail } from '../mail/outbox.ts';
import type { Transaction } from '../storage/db.ts';
import type { WebhookData } from '../webhooks/events.ts';

/**
 * Erases the account, for its owner (features/account) and an operator: `lock` takes step 2
 * of the lock order, and says whether to go on ('go-on') or why not, which is returned and
 * rolls everything back. The webhook's `data` tells the application who acted, and
 * `clientAddress` null tells the owner's notice that an operator did. The account's name stays
 * held for its address for NAME_HOLD_DAYS (a keyed hash of the address, nothing else), so that
 * whoever deleted it cannot hand the name to another address.
 */
export async function eraseAccount<Refusal extends string>(
  deps: UseCaseDeps, account: Pick<Account, 'id' | 'publicId' | 'name' | 'email' | 'locale'>,
  clientAddress: string | null, lock: (tx: Transaction) => Promise<'go-on' | Refusal>, data: WebhookData = {},
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

/**
 * Holds a deleted account's name for `days`, for the address it had, kept as its keyed hash
 * (`addressKey`): only that address may register the name meanwhile (claimName).
 */
export async function holdName(
  tx: Transaction, name: string, addressKey: Buffer, now: Date, days: number,
): Promise<void> {
  const expiresAt = new Date(now.getTime() + days * 24 * 3600 * 1000);
  await tx`
    INSERT INTO name_holds (name, address_key, expires_at) VALUES (${name}, ${addressKey}, ${expiresAt})
    ON CONFLICT (name) DO UPDATE
    SET address = NULL, address_key = excluded.address_key, expires_at = excluded.expires_at`;
}

/** The ways in that outlive a password reset: their table, event and webhook. */
const waysIn = [
  { table: 'passkeys', event: 'passkey-removed', webhook: 'passkey.removed', key: 'passkey_id' },
  { table: 'identities', event: 'identity-removed', webhook: 'identity.removed', key: 'identity_id' },
] as const;

/**
 * Removes every passkey and every identity at a provider of the account, each with its event
 * (`recordRemoval`) and webhook carrying `data`; how many of each. The owner's reset does it on
 * request, as the mailbox proves the owner, and an operator's forced reset always: a way in that
 * an intruder added while holding the mailbox would otherwise sign in again after every reset.
 */
export async function removeWaysIn(
  tx: Transaction, deps: UseCaseDeps, account: { id: string; publicId: string }, now: Date,
  recordRemoval: (event: 'passkey-removed' | 'identity-removed') => Promise<void>, data: WebhookData = {},
): Promise<{ passkeys: number; identities: number }> {
  const counts = { passkeys: 0, identities: 0 };
  for (const way of waysIn) {
    const removed = await tx<{ id: string }[]>`
      DELETE FROM ${tx(way.table)} WHERE account_id = ${account.id} RETURNING id`;
    for (const { id } of removed) {
      await recordRemoval(way.event);
      await deps.webhooks.enqueue(tx, way.webhook, account.publicId, now, { [way.key]: id, ...data });
    }
    counts[way.table] = removed.length;
  }
  return counts;
}
