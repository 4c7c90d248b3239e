import { findSessionOwner } from '../../core/sessions.ts';
import type { TokenClaims } from '../../core/tokens.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { inTransaction, lockAccount, retryOnce, type Client, type UseCaseDeps } from '../../core/transaction.ts';

/**
 * Signs one session of the account out (the caller's own included): one statement. False if
 * the account has no session with this id, which another account's session id also gets.
 */
export async function endSession(
  deps: UseCaseDeps, accountId: string, sessionId: string, client: Client,
): Promise<boolean> {
  const event = { type: 'session-revoked', clientAddress: client.address, sessionId } as const;
  const now = deps.clock();
  const ended = await retryOnce(() => endSessions(deps.sql, { accountId, sessionId, event, record: 'if-ended', now }));
  return ended.length === 1;
}

/**
 * RFC 7009 revocation: ends the session of an access token (its verified claims) or of a
 * refresh token, current or spent. Nothing happens for a token that names no session.
 */
export async function revokeToken(
  deps: UseCaseDeps, token: { claims: TokenClaims } | { refreshToken: string }, client: Client,
): Promise<void> {
  const by = 'claims' in token ? { accountPublicId: token.claims.sub, sessionId: token.claims.sid } : token;
  const owner = await findSessionOwner(deps.sql, by);
  if (owner !== null) await endSession(deps, owner.accountId, owner.sessionId, client);
}

/** Signs out everywhere: every session of the account ends, the caller's own included. */
export async function endAllSessions(
  deps: UseCaseDeps, account: { id: string; publicId: string }, callerSessionId: string, client: Client,
): Promise<void> {
  const now = deps.clock();
  const webhook = deps.webhooks.event('sessions.revoked', account.publicId, now, { reason: 'signed_out_everywhere' });
  await inTransaction(deps.sql, async (tx) => {
    // Locked by a statement of its own first, so that the delete sees every session started before.
    if (!(await lockAccount(tx, account.id))) return;
    const event = { type: 'signed-out-everywhere', clientAddress: client.address, sessionId: callerSessionId } as const;
    await endSessions(tx, { accountId: account.id, sessionId: null, event, webhook, record: 'always', now });
  });
  deps.webhooks.wake();
}
