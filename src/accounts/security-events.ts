import type { Sql, Transaction } from '../storage/db.ts';

export type EventType =
  | 'activated'
  | 'signed-in'
  | 'sign-in-failed'
  | 'password-changed'
  | 'reset-requested'
  | 'password-reset'
  | 'session-revoked'
  | 'signed-out-everywhere'
  | 'refresh-retried'
  | 'refresh-token-reused'
  | 'email-change-requested'
  | 'email-changed';

export type SecurityEvent = { type: EventType; occurredAt: Date; clientAddress: string; sessionId: string | null };

/** How many events GET /acc/me/events shows. */
export const shownEvents = 50;
/**
 * How many of them may be failed sign-ins. Anyone can fail to sign in to any account, so without
 * a cap a stranger's guesses would push everything else out of the owner's view.
 */
export const shownFailures = 10;

/**
 * Records an event of the account, in the caller's transaction when there is one. With
 * `accountId` null (a name that belongs to no account) the same statement runs and writes
 * nothing, so that a failed sign-in on an unknown name costs what one on a known name costs.
 */
export async function recordEvent(sql: Sql | Transaction, accountId: string | null, type: EventType, clientAddress: string, sessionId: string | null, now: Date): Promise<void> {
  await sql`
    INSERT INTO security_events (account_id, type, occurred_at, client_address, session_id)
    SELECT id, ${type}, ${now}, ${clientAddress.slice(0, 64)}, ${sessionId} FROM accounts WHERE id = ${accountId}`;
}

/** The account's latest events, newest first, of which at most `shownFailures` failed sign-ins. */
export async function listEvents(sql: Sql, accountId: string): Promise<SecurityEvent[]> {
  return sql<SecurityEvent[]>`
    SELECT type, occurred_at AS "occurredAt", client_address AS "clientAddress", session_id AS "sessionId"
    FROM (
      (SELECT * FROM security_events WHERE account_id = ${accountId} AND type <> 'sign-in-failed' ORDER BY occurred_at DESC, id DESC LIMIT ${shownEvents})
      UNION ALL
      (SELECT * FROM security_events WHERE account_id = ${accountId} AND type = 'sign-in-failed' ORDER BY occurred_at DESC, id DESC LIMIT ${shownFailures})
    ) AS latest
    ORDER BY occurred_at DESC, id DESC LIMIT ${shownEvents}`;
}

/** Deletes events that happened before `before`; returns how many. */
export async function deleteOldEvents(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM security_events WHERE occurred_at < ${before}`;
  return rows.count;
}
