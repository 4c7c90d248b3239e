import { findAccountByLogin, lockUnchangedPasswordHash, upgradePasswordHash } from '../accounts/accounts.ts';
import { checkThrottledPassword } from '../http/auth.ts';
import { OAuthError } from '../http/errors.ts';
import { readOAuthParameters, stringParameter } from '../http/oauth.ts';
import type { Deps, Handler, Reply, RequestContext } from '../http/router.ts';
import { recordEvent, recordFailedSignIn } from '../accounts/security-events.ts';
import { secondFactorGate } from '../use-cases/second-factor.ts';
import { patterns } from '../validation.ts';
import { rotateRefreshToken, startSession, type Client } from '../sessions/sessions.ts';

const maxUsernameLength = 254;
const maxPasswordLength = 256;
const maxRefreshTokenLength = 256;
const maxOtpLength = 32;
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
  const otp = otpParameter(params);
  const account = await findAccountByLogin(deps.sql, username);
  // Second factor (issue 23): read only after the password is proven, so a wrong password
  // answers the same, with the same work, whether or not the account has one.
  const secondFactor = account === null ? null : secondFactorGate(deps, account, otp, ctx.clientAddress, null, deps.clock());
  // The same scrypt work and the same answer whether the account is unknown or the password
  // wrong, so that neither timing nor response tells which names exist.
  const valid = await checkThrottledPassword(deps, ctx, username, password, account?.passwordHash ?? null, secondFactor?.check);
  if (secondFactor?.outcome === 'missing') throw new OAuthError('mfa_required', 'The account has a second factor: send otp, a code of the authenticator app or a recovery code.');
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
  const rotation = await rotateRefreshToken(deps.sql, presented, clientOf(ctx), now);
  if (rotation.outcome === 'reused') {
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

/** The optional `otp` (issue 23): a 6-digit TOTP code or a recovery code; malformed is refused before anything is read. */
function otpParameter(params: Record<string, unknown>): string | undefined {
  if (params.otp === undefined) return undefined;
  const otp = stringParameter(params, 'otp', maxOtpLength);
  if (!patterns.otp.test(otp)) throw new OAuthError('invalid_request', 'otp must be a 6-digit code or a recovery code.');
  return otp;
}

function clientOf(ctx: RequestContext): Client {
  const userAgent = ctx.req.headers['user-agent'] ?? '';
  return { address: ctx.clientAddress, userAgent };
}
