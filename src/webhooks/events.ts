import type { Transaction } from '../storage/db.ts';
import { newWebhookId } from './signing.ts';

/**
 * Every event the service tells the application about. `account.email_changed` and
 * `second_factor.*` are sent by the features that cause them (their data: see docs/webhooks.md).
 */
export const webhookEventTypes = [
  'account.activated',
  'account.deleted',
  'account.email_changed',
  'password.changed',
  'password.reset',
  'sessions.revoked',
  'second_factor.enabled',
  'second_factor.disabled',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/**
 * Fields an event carries besides its account. Only what the application needs to update its
 * own records: never a password, a code, a token, a hash or a secret.
 */
export type WebhookData = Record<string, string | number | boolean | null>;

/** What a use case needs: queue an event in its transaction, and wake the worker after commit. */
export type Webhooks = {
  /**
   * Queues an event of the account (its public id, the token's `sub`) in the caller's
   * transaction, so that the event exists exactly when its cause does. Does nothing while
   * WEBHOOK_URL is unset.
   */
  enqueue(tx: Transaction, type: WebhookEventType, accountPublicId: string, now: Date, data?: WebhookData): Promise<void>;
  /** Asks the worker to deliver now; call it after the commit. */
  wake(): void;
};

export const disabledWebhooks: Webhooks = {
  enqueue: async () => {},
  wake: () => {},
};

/** The body, fixed when queued: every attempt sends and signs these same bytes. */
export function webhookBody(type: WebhookEventType, accountPublicId: string, now: Date, data: WebhookData = {}): string {
  return JSON.stringify({ type, timestamp: now.toISOString(), data: { ...data, account_id: accountPublicId } });
}

export async function enqueueWebhook(tx: Transaction, type: WebhookEventType, accountPublicId: string, now: Date, data: WebhookData = {}): Promise<void> {
  await tx`
    INSERT INTO webhook_events (webhook_id, type, account, body, next_attempt_at, created_at)
    VALUES (${newWebhookId()}, ${type}, ${accountPublicId}, ${webhookBody(type, accountPublicId, now, data)}, ${now}, ${now})`;
}
