import { findAccountByLogin, lockUnchangedPasswordHash, upgradePasswordHash } from '../accounts/accounts.ts';
import { checkThrottledPassword } from '../http/auth.ts';
import { OAuthError } from '../http/errors.ts';
import { readOAuthParameters, stringParameter } from '../http/oauth.ts';
import type { Deps, Handler, Reply, RequestContext } from '../http/router.ts';
import { recordEvent, recordFailedSignIn } from '../accounts/security-events.ts';
import { rotateRefreshToken, startSession, type Client } from '../sessions/sessions.ts';

const maxUsernameLength = 254;
const maxPasswordLength = 256;
const maxRefreshTokenLength = 256;
const printableAscii = /^[\x21-\x7e]+$/;

/**
 * POST /auth/token (RFC 6749): the resource owner password grant (§4.3) starts a session, and
 * the refresh token grant (§6) rotates its refresh token. JSON or form encoding. Errors follow
 * RFC 6749 §5.2, not RFC 9457, as OAuth clients expect.
 */
export const issueToken: Handler = async (ctx, deps) => {
  const params = await readOAuthParameters(ctx.req);
  // Unknown parameters (scope, client_id …) are ignored, as RFC 6749 §3.2 requires of the server.
  const grantType = params.grant_type;
  if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required.');
  if (grantType === 'password') return passwordGrant(ctx, deps, params);
  if (grantType === 'refresh_token') return refreshGrant(ctx, deps, params);
  throw new OAuthError('unsupported_grant_type', 'grant_type must be password or refresh_token.');
};

async function passwordGrant(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply> {
  const username = stringParameter(params, 'username', maxUsernameLength);
  // Every stored name and address is printable ASCII (the spec's patterns). Anything else could
  // only be folded onto one by the database's case rules ('İ' onto 'i') while the throttle keys
  // it apart, or carry a NUL that PostgreSQL refuses: it is refused here, the same for everyone.
  if (!printableAscii.test(username)) throw new OAuthError('invalid_request', 'username must be printable ASCII without spaces.');
  const password = stringParameter(params, 'password', maxPasswordLength);
  const account = await findAccountByLogin(deps.sql, username);
  // The same scrypt work and the same answer whether the account is unknown or the password
  // wrong, so that neither timing nor response tells which names exist.
  const valid = await checkThrottledPassword(deps, ctx, username, password, account?.passwordHash ?? null);
  if (account === null || !valid) {
    // The same statement for an unknown name, writing nothing (security-events.ts).
    await recordFailedSignIn(deps.sql, account?.id ?? null, ctx.clientAddress, null, deps.clock());
    throw new OAuthError('invalid_grant', 'The username or password is incorrect.');
  }

  const upgraded = deps.passwords.needsRehash(account.passwordHash) ? await deps.passwords.hash(password) : null;
  const now = deps.clock();
  const started = await deps.sql.begin(async (tx) => {
    // The password was checked against the hash read before; if a reset or change replaced it
    // meanwhile (and ended every session), this sign-in must not start a session after them.
    if (!(await lockUnchangedPasswordHash(tx, account.id, account.passwordHash))) return null;
    if (upgraded !== null) await upgradePasswordHash(tx, account.id, account.passwordHash, upgraded);
    const session = await startSession(tx, account.id, clientOf(ctx), now, deps.config.refreshTtlSeconds);
    await recordEvent(tx, account.id, 'signed-in', ctx.clientAddress, session.sessionId, now);
    return session;
  });
  if (started === null) throw new OAuthError('invalid_grant', 'The username or password is incorrect.');
  return tokenReply(deps, account.publicId, started.sessionId, started.refreshToken, now);
}

async function refreshGrant(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply> {
  const presented = stringParameter(params, 'refresh_token', maxRefreshTokenLength);
  const now = deps.clock();
  const rotation = await rotateRefreshToken(deps.sql, presented, clientOf(ctx), now, deps.webhooks);
  if (rotation.outcome === 'reused') {
    deps.webhooks.wake();
    deps.metrics.increment('refresh_token_reuses_total');
    deps.log.warn('spent refresh token presented again; session revoked', { request_id: ctx.requestId, session_id: rotation.sessionId });
  }
  if (rotation.outcome !== 'rotated') throw new OAuthError('invalid_grant', 'The refresh token is invalid, expired, revoked or already used.');
  deps.metrics.increment('refresh_token_rotations_total');
  return tokenReply(deps, rotation.accountPublicId, rotation.sessionId, rotation.refreshToken, now);
}

function tokenReply(deps: Deps, accountPublicId: string, sessionId: string, refreshToken: string, now: Date): Reply {
  const { token, expiresIn } = deps.tokens.issueToken(accountPublicId, sessionId, now);
  return {
    status: 200,
    body: { access_token: token, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refreshToken },
    headers: { Pragma: 'no-cache' },
  };
}

function clientOf(ctx: RequestContext): Client {
  const userAgent = ctx.req.headers['user-agent'] ?? '';
  return { address: ctx.clientAddress, userAgent };
}
