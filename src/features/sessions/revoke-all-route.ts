import { authenticate, clientOf } from '../../core/auth.ts';
import type { Handler } from '../../http/router.ts';
import { endAllSessions } from './end-session.ts';

/** DELETE /acc/me/sessions: sign out everywhere, the caller's own session included. */
export const revokeAllSessions: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  await endAllSessions(deps, account, sessionId, clientOf(ctx));
  return { status: 204 };
};
