import { authenticate, sessionAllowance, takeAccountAllowance } from '../../core/auth.ts';
import { accountRateLimited } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { isoUtc } from '../../support/format.ts';
import { listLiveSessions } from '../../core/reads.ts';

/** GET /acc/me/sessions: where the account is signed in, the caller's own session marked. */
export const getSessions: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const wait = takeAccountAllowance(deps, sessionAllowance(sessionId));
  if (wait > 0) throw accountRateLimited(wait);
  const sessions = await listLiveSessions(deps, account.id);
  return {
    status: 200,
    body: {
      sessions: sessions.map((session) => ({
        id: session.id,
        created_at: isoUtc(session.createdAt),
        last_used_at: isoUtc(session.lastUsedAt),
        client_address: session.clientAddress,
        user_agent: session.userAgent,
        current: session.id === sessionId,
      })),
    },
  };
};
