import { authenticate } from '../http/auth.ts';
import type { Handler } from '../http/router.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { revokeAllSessions } from '../sessions/sessions.ts';

/** DELETE /acc/me/sessions: sign out everywhere, the caller's own session included. */
export const deleteAllSessions: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const now = deps.clock();
  await deps.sql.begin(async (tx) => {
    await revokeAllSessions(tx, account.id);
    await recordEvent(tx, account.id, 'signed-out-everywhere', ctx.clientAddress, sessionId, now);
    await deps.webhooks.enqueue(tx, 'sessions.revoked', account.publicId, now, { reason: 'signed_out_everywhere' });
  });
  deps.webhooks.wake();
  return { status: 204 };
};
