import { authenticate } from '../../core/auth.ts';
import type { Handler } from '../../http/router.ts';
import { isoUtc } from '../../support/format.ts';
import {
  shownEvents, shownStrangerEvents, strangerKinds, type EventType, type SecurityEvent,
} from '../../core/security-events.ts';
import type { Sql } from '../../storage/db.ts';

/**
 * GET /acc/me/events: the account's latest security events, newest first. An operator's action
 * shows as actor `operator`, with no client address (where the operator worked from is the
 * operator's business) and without the operator's reason, which is written for the operators'
 * records and the application's webhook and may name what the owner should not read (a ticket,
 * a fraud signal, someone's report): the application tells the owner in its own words.
 */
export const getEvents: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  const events = await listEvents(deps.sql, account.id);
  return {
    status: 200,
    body: {
      events: events.map((event) => ({
        type: event.type,
        occurred_at: isoUtc(event.occurredAt),
        actor: event.actor ?? 'client',
        client_address: event.actor === null ? event.clientAddress : null,
        session_id: event.sessionId,
      })),
    },
  };
};

/** The account's latest events, newest first, of which at most `shownStrangerEvents` of the strangers' kinds. */
export async function listEvents(sql: Sql, accountId: string): Promise<SecurityEvent[]> {
  return sql<SecurityEvent[]>`
    SELECT type, occurred_at AS "occurredAt", client_address AS "clientAddress", session_id AS "sessionId", actor
    FROM (
      (SELECT * FROM security_events WHERE account_id = ${accountId} AND type <> ALL(${strangerKinds as EventType[]})
       ORDER BY occurred_at DESC, id DESC LIMIT ${shownEvents})
      UNION ALL
      (SELECT * FROM security_events WHERE account_id = ${accountId} AND type = ANY(${strangerKinds as EventType[]})
       ORDER BY occurred_at DESC, id DESC LIMIT ${shownStrangerEvents})
    ) AS latest
    ORDER BY occurred_at DESC, id DESC LIMIT ${shownEvents}`;
}
