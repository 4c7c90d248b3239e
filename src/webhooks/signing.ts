import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (symmetric, `v1`): HMAC-SHA256 of `id.timestamp.body`, under the
 * bytes a `whsec_` secret encodes, sent as `v1,<base64>`. Receivers verify them with the
 * Standard Webhooks libraries, so nothing here is of our own invention.
 */

/**
 * The `webhook-signature` header: one `v1,` signature per key, space-separated, so that a
 * receiver that knows either the old or the new secret accepts the event during a rotation.
 */
export function signWebhook(
  keys: readonly Buffer[], webhookId: string, timestampSeconds: number, body: string,
): string {
  const signed = `${webhookId}.${timestampSeconds}.${body}`;
  return keys.map((key) => `v1,${createHmac('sha256', key).update(signed).digest('base64')}`).join(' ');
}

/**
 * The `webhook-id`: random, kept for every attempt of one event, and free of the `.` the
 * signature uses as a delimiter.
 */
export function newWebhookId(): string {
  return `msg_${randomBytes(18).toString('base64url')}`;
}

/** The three Standard Webhooks headers of one attempt, signed at the time of that attempt. */
export function webhookHeaders(
  keys: readonly Buffer[], webhookId: string, body: string, now: Date,
): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(keys, webhookId, timestamp, body),
  };
}
