import { authenticate } from '../http/auth.ts';
import type { Handler } from '../http/router.ts';
import { isoUtc } from '../format.ts';
import { listRecentEvents } from '../use-cases/reads.ts';

/** GET /acc/me/events: the account's latest security events, newest first. */
export const getEvents: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  const events = await listRecentEvents(deps, account.id);
  return {
    status: 200,
    body: {
      events: events.map((event) => ({ type: event.type, occurred_at: isoUtc(event.occurredAt), client_address: event.clientAddress, session_id: event.sessionId })),
    },
  };
};
