import {
  describeAccount, findAccountRef, listAccounts, listOperatorEvents, throttleState, type AccountFilter,
} from './views.ts';
import { listFailedMail, retryFailedMail } from '../../mail/failed-mail.ts';
import { listFailedWebhooks, retryFailedWebhooks } from '../../webhooks/failed-events.ts';
import { throttleKeys } from '../../core/password-check.ts';
import type { UseCaseDeps } from '../../core/transaction.ts';

/**
 * The operator's reads, and the retries of failed mail and webhooks. Reads are single
 * statements outside any transaction; a retry changes only rows that are failed, in one
 * statement, so that it cannot race the workers into sending a message twice.
 */

/** `find`: the account's state, with its sign-in throttle (on its name, its address and its own key). */
export async function findAccount(deps: UseCaseDeps, identifier: string) {
  const account = await findAccountRef(deps.sql, identifier);
  if (account === null) return null;
  const now = deps.clock();
  const row = await describeAccount(deps.sql, account.id, now);
  if (row === null) return null;
  return {
    id: row.public_id as string,
    name: row.name as string,
    email: row.email as string,
    phone: row.phone as string | null,
    status: row.disabled_at === null ? 'active' : 'disabled',
    created_at: (row.activated_at as Date).toISOString(),
    disabled_at: (row.disabled_at as Date | null)?.toISOString() ?? null,
    disabled_reason: row.disabled_reason as string | null,
    last_sign_in_at: (row.last_sign_in as Date | null)?.toISOString() ?? null,
    second_factor: row.second_factor as boolean,
    live_sessions: row.live_sessions as number,
    passkeys: row.passkeys as number,
    throttle: await throttleState(deps.sql, throttleKeys(deps, account), now),
  };
}

/** The public id of the account `identifier` names (name, address or id), for the admin log; null if none. */
export async function accountPublicId(deps: UseCaseDeps, identifier: string | null): Promise<string | null> {
  if (identifier === null) return null;
  return (await findAccountRef(deps.sql, identifier))?.publicId ?? null;
}

/** `list`: a page of accounts, newest first (views.ts listAccounts). */
export function listAccountsPage(deps: UseCaseDeps, filter: AccountFilter) {
  return listAccounts(deps.sql, filter);
}

/** `events`: the account's latest events with actor and reason; null for an unknown account. */
export async function listAccountEvents(deps: UseCaseDeps, identifier: string, limit: number) {
  const account = await findAccountRef(deps.sql, identifier);
  return account === null ? null : listOperatorEvents(deps.sql, account.id, limit);
}

export type Queue = 'outbox' | 'webhooks';

/** The failed messages or webhook events, oldest first. */
export function listFailed(deps: UseCaseDeps, queue: Queue, limit: number) {
  return queue === 'outbox' ? listFailedMail(deps.sql, limit) : listFailedWebhooks(deps.sql, limit);
}

/** Queues again the failed message or event `id`, or every failed one (`id` null); wakes the worker. */
export async function retryFailed(deps: UseCaseDeps, queue: Queue, id: string | null): Promise<string[]> {
  const now = deps.clock();
  const retry = queue === 'outbox' ? retryFailedMail : retryFailedWebhooks;
  const retried = await retry(deps.sql, id, now);
  if (queue === 'outbox') deps.outbox.wake();
  else deps.webhooks.wake();
  return retried;
}
