import type { Fragment, Sql, Transaction } from '../storage/db.ts';
import { newWebhookId } from './signing.ts';

/**
 * Every event the service tells the application about. `second_factor.*` is sent by the
 * feature that causes it (its data: see docs/webhooks.md).
 */
export const webhookEventTypes = [
  'account.activated',
  'account.deleted',
  'account.disabled',
  'account.enabled',
  'account.unlocked',
  'account.email_changed',
  'password.changed',
  'password.reset',
  'password.reset_forced',
  'sessions.revoked',
  'second_factor.enabled',
  'second_factor.disabled',
  'passkey.added',
  'passkey.removed',
  'passkey.renamed',
  'identity.linked',
  'identity.removed',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/**
 * Fields an event carries besides its account. Only what the application needs to update its
 * own records: never a password, a code, a token, a hash or a secret.
 */
export type WebhookData = Record<string, string | number | boolean | null>;

/** One event as its table row holds it, made before the statement that writes it. */
export type WebhookRow = { webhookId: string; type: WebhookEventType; account: string; body: string; createdAt: Date };

/**
 * What a use case needs. Either way the event is written in the statement or transaction of
 * its cause, so that it exists exactly when its cause does; while WEBHOOK_URL is unset there is
 * no event and nothing is written.
 */
export type Webhooks = {
  /**
   * The event of the account (its public id, the token's `sub`), for a statement that inserts
   * it (end-sessions.ts); null when off.
   */
  event(type: WebhookEventType, accountPublicId: string, now: Date, data?: WebhookData): WebhookRow | null;
  /** Queues the event in the caller's transaction. */
  enqueue(
    tx: Transaction, type: WebhookEventType, accountPublicId: string, now: Date, data?: WebhookData,
  ): Promise<void>;
  /** Asks the worker to deliver now; call it after the commit. */
  wake(): void;
};

export const disabledWebhooks: Webhooks = {
  event: () => null,
  enqueue: async () => {},
  wake: () => {},
};

export const enabledWebhooks = (wake: () => void): Webhooks => ({
  event: webhookRow,
  enqueue: (tx, type, accountPublicId, now, data) => insertWebhook(tx, webhookRow(type, accountPublicId, now, data)),
  wake,
});

/** The body is fixed here: every attempt sends and signs these same bytes. */
export function webhookRow(
  type: WebhookEventType, accountPublicId: string, now: Date, data: WebhookData = {},
): WebhookRow {
  const body = webhookBody(type, accountPublicId, now, data);
  return { webhookId: newWebhookId(), type, account: accountPublicId, body, createdAt: now };
}

export function webhookBody(
  type: WebhookEventType, accountPublicId: string, now: Date, data: WebhookData = {},
): string {
  return JSON.stringify({ type, timestamp: now.toISOString(), data: { ...data, account_id: accountPublicId } });
}

async function insertWebhook(tx: Transaction, row: WebhookRow): Promise<void> {
  await tx`${insertWebhookEvents(tx, row)}`;
}

/**
 * THE insert of webhook events, for every statement that writes them: once, or once for each row
 * of `source` (a FROM clause, and its WHERE). A trigger (sql/016) moves an event's first attempt
 * to no earlier than its account's pending events, so that none is due before an earlier one.
 */
export function insertWebhookEvents(sql: Sql | Transaction, row: WebhookRow, source: Fragment = sql``): Fragment {
  return sql`
    INSERT INTO webhook_events (webhook_id, type, account, body, next_attempt_at, created_at)
    SELECT ${row.webhookId}::text, ${row.type}::text, ${row.account}::uuid, ${row.body}::text,
      ${row.createdAt}::timestamptz, ${row.createdAt}::timestamptz ${source}`;
}
