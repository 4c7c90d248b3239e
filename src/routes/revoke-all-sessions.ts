import { authenticate } from '../http/auth.ts';
import type { Handler } from '../http/router.ts';
import { revokeAllSessions } from '../sessions.ts';

/** DELETE /acc/me/sessions: sign out everywhere, the caller's own session included. */
export const deleteAllSessions: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  await revokeAllSessions(deps.sql, account.id);
  return { status: 204 };
};
