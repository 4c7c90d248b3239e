import { authenticate } from '../http/auth.ts';
import type { Handler } from '../http/router.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { revokeAllSessions } from '../sessions/sessions.ts';

/** DELETE /acc/me/sessions: sign out everywhere, the caller's own session included. */
export const deleteAllSessions: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  await deps.sql.begin(async (tx) => {
    await revokeAllSessions(tx, account.id);
    await recordEvent(tx, account.id, 'signed-out-everywhere', ctx.clientAddress, sessionId, deps.clock());
  });
  return { status: 204 };
};
