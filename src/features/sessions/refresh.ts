import { findSessionOwner, rotateRefreshToken } from '../../core/sessions.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { retryOnce, type Client, type UseCaseDeps } from '../../core/transaction.ts';

export type Refresh =
  | { outcome: 'refreshed'; accountPublicId: string; sessionId: string; refreshToken: string }
  | { outcome: 'refused' }
  /** The session is past its rate limit (`takeAllowance`): nothing was rotated. */
  | { outcome: 'limited'; retryAfterSeconds: number };

/**
 * Refresh token grant: one round trip in the common case (rotateRefreshToken). A spent token
 * presented out of its retry window means two parties hold the session: the session ends, in a
 * transaction of its own. Reuse stays reuse (a spent token never becomes live again, and time
 * only passes), so ending the session after the first statement decided it loses nothing; if
 * the process stops in between, the next presentation decides the same.
 *
 * `takeAllowance`, when the rate limit is on, takes one refresh from the session's allowance (0
 * to go on, else the seconds to wait).
 */
export async function refreshSession(
  deps: UseCaseDeps,
  presented: string,
  client: Client,
  takeAllowance: ((sessionId: string) => number) | null = null,
): Promise<Refresh> {
  if (takeAllowance !== null) {
    // Counted before the rotation writes anything: each leaves a spent token behind for a day, so
    // the session's allowance is what bounds how many a client's refresh loop makes the database
    // hold. Finding the session costs one more round trip, only while the limit is on.
    const owner = await findSessionOwner(deps.sql, { refreshToken: presented });
    const wait = owner === null ? 0 : takeAllowance(owner.sessionId);
    if (wait > 0) return { outcome: 'limited', retryAfterSeconds: wait };
  }
  const now = deps.clock();
  const rotation = await retryOnce(() => rotateRefreshToken(deps.sql, presented, client, now));
  if (rotation.outcome === 'reused') {
    const { accountId, sessionId } = rotation;
    // The rotation does not name the account's public id on reuse; it never changes, so it is read apart.
    const [owner] = await deps.sql`SELECT public_id FROM accounts WHERE id = ${accountId}`;
    const publicId = (owner?.public_id as string | undefined) ?? null;
    const data = { reason: 'refresh_token_reused', session_id: sessionId };
    const webhook = publicId === null ? null : deps.webhooks.event('sessions.revoked', publicId, now, data);
    const event = { type: 'refresh-token-reused', clientAddress: client.address, sessionId } as const;
    await retryOnce(() => endSessions(deps.sql, { accountId, sessionId, event, webhook, record: 'if-ended', now }));
    deps.webhooks.wake();
    deps.metrics.increment('refresh_token_reuses_total');
    deps.log.warn('spent refresh token presented again; session revoked', { session_id: sessionId });
    return { outcome: 'refused' };
  }
  if (rotation.outcome === 'refused') return rotation;
  deps.metrics.increment('refresh_token_rotations_total');
  const { accountPublicId, sessionId, refreshToken } = rotation;
  if (rotation.outcome === 'retried') {
    const message = 'refresh retried within the window; the earlier successor no longer works';
    deps.log.info(message, { session_id: sessionId });
  }
  return { outcome: 'refreshed', accountPublicId, sessionId, refreshToken };
}
