import { findSessionOwner } from '../sessions/sessions.ts';
import type { TokenClaims } from '../sessions/tokens.ts';
import { endSessions } from './end-sessions.ts';
import { inTransaction, lockAccount, retryOnce, type Client, type UseCaseDeps } from './transaction.ts';

/**
 * Signs one session of the account out (the caller's own included): one statement. False if
 * the account has no session with this id, which another account's session id also gets.
 */
export async function endSession(deps: UseCaseDeps, accountId: string, sessionId: string, client: Client): Promise<boolean> {
  const event = { type: 'session-revoked', clientAddress: client.address, sessionId } as const;
  const ended = await retryOnce(() => endSessions(deps.sql, { accountId, sessionId, event, record: 'if-ended', now: deps.clock() }));
  return ended.length === 1;
}

/**
 * RFC 7009 revocation: ends the session of an access token (its verified claims) or of a
 * refresh token, current or spent. Nothing happens for a token that names no session.
 */
export async function revokeToken(deps: UseCaseDeps, token: { claims: TokenClaims } | { refreshToken: string }, client: Client): Promise<void> {
  const owner = await findSessionOwner(deps.sql, 'claims' in token ? { accountPublicId: token.claims.sub, sessionId: token.claims.sid } : token);
  if (owner !== null) await endSession(deps, owner.accountId, owner.sessionId, client);
}

/** Signs out everywhere: every session of the account ends, the caller's own included. */
export async function endAllSessions(deps: UseCaseDeps, account: { id: string; publicId: string }, callerSessionId: string, client: Client): Promise<void> {
  const now = deps.clock();
  const webhook = deps.webhooks.event('sessions.revoked', account.publicId, now, { reason: 'signed_out_everywhere' });
  await inTransaction(deps.sql, async (tx) => {
    // Locked by a statement of its own first, so that the delete sees every session started before.
    if (!(await lockAccount(tx, account.id))) return;
    await endSessions(tx, { accountId: account.id, sessionId: null, event: { type: 'signed-out-everywhere', clientAddress: client.address, sessionId: callerSessionId }, webhook, record: 'always', now });
  });
  deps.webhooks.wake();
}
