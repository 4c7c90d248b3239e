import { authenticate, sessionAllowance, takeAccountAllowance } from '../../core/auth.ts';
import { accountRateLimited } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { isoUtc } from '../../support/format.ts';
import type { Session } from '../../core/sessions.ts';
import type { Sql } from '../../storage/db.ts';

/** GET /acc/me/sessions: where the account is signed in, the caller's own session marked. */
export const getSessions: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const wait = takeAccountAllowance(deps, sessionAllowance(sessionId));
  if (wait > 0) throw accountRateLimited(wait);
  const sessions = await listSessions(deps.sql, account.id, deps.clock(), deps.config.sessionsPerAccount);
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

/**
 * The account's live sessions, the most recently used first, at most `limit` of them. Sign-ins
 * keep an account within the cap; the limit bounds the answer also while an account still holds
 * more than a lowered SESSIONS_PER_ACCOUNT allows (until its next sign-in).
 */
export async function listSessions(sql: Sql, accountId: string, now: Date, limit: number): Promise<Session[]> {
  return sql<Session[]>`
    SELECT id, created_at AS "createdAt", last_used_at AS "lastUsedAt", client_address AS "clientAddress",
      user_agent AS "userAgent"
    FROM sessions WHERE account_id = ${accountId} AND expires_at > ${now}
    ORDER BY last_used_at DESC, created_at DESC LIMIT ${limit}`;
}
