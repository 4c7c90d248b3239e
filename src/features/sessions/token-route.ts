import { accountRateLimited, OAuthError } from '../../http/errors.ts';
import { clientOf, sessionAllowance, signInAllowance, takeAccountAllowance } from '../../core/auth.ts';
import { otpParameter, readOAuthParameters, signInReply, stringParameter, tokenReply } from '../../http/oauth.ts';
import type { Deps, Handler, Reply, RequestContext } from '../../http/router.ts';
import { patterns } from '../../core/fields.ts';
import { refreshSession } from './refresh.ts';
import { signIn } from './sign-in.ts';

const maxUsernameLength = 254;
const maxPasswordLength = 256;
const maxRefreshTokenLength = 256;
/** No space: the account's own throttle identifiers hold one, so no username reaches them (password-check.ts). */
const printableAscii = /^[\x21-\x7e]+$/;

/**
 * POST /auth/token (RFC 6749): the resource owner password grant (§4.3) starts a session, and
 * the refresh token grant (§6) rotates its refresh token; the grants of features that are on
 * (Deps.grants: a passkey's) are handed in at wiring time. JSON or form encoding. Errors follow
 * RFC 6749 §5.2, not RFC 9457, as OAuth clients expect.
 */
export const issueToken: Handler = async (ctx, deps) => {
  const params = await readOAuthParameters(ctx.req);
  // Unknown parameters (scope, client_id …) are ignored, as RFC 6749 §3.2 requires of the server.
  const grantType = params.grant_type;
  if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required.');
  if (grantType === 'password') return passwordGrant(ctx, deps, params);
  if (grantType === 'refresh_token') return refreshGrant(ctx, deps, params);
  const grant = deps.grants.find((candidate) => candidate.type === grantType);
  if (grant !== undefined) return grant.handle(ctx, deps, params);
  const known = ['password', 'refresh_token', ...deps.grants.map((candidate) => candidate.type)];
  throw new OAuthError('unsupported_grant_type', `grant_type must be ${known.join(', ')}.`);
};

async function passwordGrant(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply> {
  const username = stringParameter(params, 'username', maxUsernameLength);
  // Every stored name and address is printable ASCII (the spec's patterns). Anything else could
  // only be folded onto one by the database's case rules ('İ' onto 'i') while the throttle keys
  // it apart, or carry a NUL that PostgreSQL refuses: it is refused here, the same for everyone.
  if (!printableAscii.test(username)) {
    throw new OAuthError('invalid_request', 'username must be printable ASCII without spaces.');
  }
  const password = stringParameter(params, 'password', maxPasswordLength);
  const otp = otpParameter(params, patterns.otp);
  const takeAllowance = (accountId: string) =>
    takeAccountAllowance(deps, signInAllowance(accountId, ctx.clientAddress));
  const result = await signIn(deps, username, password, otp, clientOf(ctx), takeAllowance);
  return signInReply(deps, result, 'The username or password is incorrect.');
}

async function refreshGrant(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply> {
  const presented = stringParameter(params, 'refresh_token', maxRefreshTokenLength);
  const takeAllowance = deps.accountRateLimiter === null
    ? null
    : (sessionId: string) => takeAccountAllowance(deps, sessionAllowance(sessionId));
  const result = await refreshSession(deps, presented, clientOf(ctx), takeAllowance);
  if (result.outcome === 'limited') throw accountRateLimited(result.retryAfterSeconds);
  if (result.outcome === 'refused') {
    throw new OAuthError('invalid_grant', 'The refresh token is invalid, expired, revoked or already used.');
  }
  return tokenReply(deps, result.accountPublicId, result.sessionId, result.refreshToken);
}
