import { insertEvents, type EventType, type OperatorAct } from './security-events.ts';
import type { Sql, Transaction } from '../storage/db.ts';
import { insertWebhookEvents, type WebhookRow } from '../webhooks/events.ts';

/** Which sessions end, and the event that says why. */
export type SessionsEnd = {
  accountId: string;
  /** One session, or null for every session of the account. */
  sessionId: string | null;
  /** With `sessionId` null: every session but this one (an e-mail change keeps the session that asked for it). */
  keptSessionId?: string;
  /** The security event that says why; null records none. */
  event: { type: EventType; clientAddress: string; sessionId: string | null; operator?: OperatorAct } | null;
  /** The webhook event of the same cause (Webhooks.event); null while webhooks are off. */
  webhook?: WebhookRow | null;
  /**
   * When the two events are written: 'always', for a cause that matters whether or not a
   * session was live (a password change, a reset); 'if-ended', for the end itself (a revocation).
   */
  record: 'always' | 'if-ended';
  now: Date;
};

/**
 * THE way sessions end: password change, reset, deletion, reuse detection, sign-out and
 * revocation all come here, so that the event and the webhook event are written with the end
 * in one statement, in the caller's transaction. Returns the ids of the sessions it ended.
 *
 * Lock order (core/transaction.ts): the account row first, taken here by the subquery
 * that runs before the delete touches a session (a no-op when the caller holds it already),
 * then sessions (their refresh tokens go by cascade), then the event and the webhook event. Ending every session
 * (`sessionId` null) needs the account locked by an earlier statement of the transaction, so
 * that this statement's snapshot holds every session started before: a sign-in holds the
 * account row until it commits.
 */
export async function endSessions(sql: Sql | Transaction, end: SessionsEnd): Promise<string[]> {
  const { accountId, sessionId, keptSessionId = null, event, now } = end;
  const when = end.record === 'always' ? sql`` : sql`WHERE EXISTS (SELECT 1 FROM ended)`;
  const webhook = end.webhook ?? null;
  const eventOf = (e: NonNullable<typeof event>) =>
    insertEvents(sql, { ...e, account: sql`${accountId}::bigint`, session: sql`${e.sessionId}::uuid`, now }, when);
  const eventRow = event === null ? null : eventOf(event);
  const rows = await sql`
    WITH ended AS (
      DELETE FROM sessions
      WHERE account_id = (SELECT id FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE)
        AND (${sessionId}::uuid IS NULL OR id = ${sessionId}::uuid)
        AND (${keptSessionId}::uuid IS NULL OR id <> ${keptSessionId}::uuid)
      RETURNING id
    )${eventRow === null ? sql`` : sql`, event AS (${eventRow})`}
    ${webhook === null ? sql`` : sql`, webhook AS (${insertWebhookEvents(sql, webhook, when)})`}
    SELECT id FROM ended`;
  return rows.map((row) => row.id as string);
}
