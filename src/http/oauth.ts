import type { IncomingMessage } from 'node:http';
import { parseJsonObject, readBody } from './body.ts';
import { accountRateLimited, OAuthError, throttled } from './errors.ts';
import type { Deps, Reply, RequestContext } from './router.ts';
import { isWellFormed, malformedReason } from './validate.ts';

/**
 * The parameters of an OAuth request (token, revocation): form-encoded as RFC 6749 and
 * RFC 7009 say, or a JSON object. A repeated form parameter is refused (RFC 6749 §3.2).
 */
export function readOAuthParameters(req: IncomingMessage): Promise<Record<string, unknown>> {
  return readBody(req, ['application/json', 'application/x-www-form-urlencoded'], (mediaType, text) =>
    mediaType === 'application/json' ? parseJsonObject(text) : parseForm(text));
}

function parseForm(text: string): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(params, key)) throw new OAuthError('invalid_request', `${key.slice(0, 32)} is repeated.`);
    params[key] = value;
  }
  return params;
}

/** A required string parameter of at most `maxLength` characters, else `invalid_request`. */
export function stringParameter(params: Record<string, unknown>, name: string, maxLength: number): string {
  const value = params[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw new OAuthError('invalid_request', `${name} must be a string of 1 to ${maxLength} characters.`);
  }
  // A lone surrogate or a NUL would hash the same as other passwords (validate.ts).
  if (!isWellFormed(value)) throw new OAuthError('invalid_request', `${name} ${malformedReason}.`);
  return value;
}

/** The optional `otp` of a sign-in, of the core's `pattern`; malformed is refused before anything is read. */
export function otpParameter(params: Record<string, unknown>, pattern: RegExp): string | undefined {
  if (params.otp === undefined) return undefined;
  const otp = stringParameter(params, 'otp', 32);
  if (!pattern.test(otp)) {
    throw new OAuthError('invalid_request', 'otp must be a 6-digit code or a recovery code.');
  }
  return otp;
}

/** A grant of the token endpoint that a feature adds (its `grant_type`, and what answers it). */
export type TokenGrant = {
  type: string;
  handle(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply>;
};

/** The token endpoint's answer (RFC 6749 §5.1): a new access token beside the session's refresh token. */
export function tokenReply(deps: Deps, accountPublicId: string, sessionId: string, refreshToken: string): Reply {
  const { token, expiresIn } = deps.tokens.issueToken(accountPublicId, sessionId, deps.clock());
  return {
    status: 200,
    body: { access_token: token, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refreshToken },
    headers: { Pragma: 'no-cache' },
  };
}

/** What a sign-in by any way in (password, passkey, provider, mailed code) ends in; the token endpoint answers it. */
export type SignIn =
  | { outcome: 'signed-in'; accountPublicId: string; sessionId: string; refreshToken: string }
  /** Unknown name, wrong password or code, or the proof changed while it was checked: one answer for all. */
  | { outcome: 'refused' }
  /** The password (or code) is right, the account has a second factor, and no otp came with it. */
  | { outcome: 'mfa-required' }
  /** The proof (and factor) are right, and an operator disabled the account: only its owner learns this. */
  | { outcome: 'disabled' }
  | { outcome: 'throttled'; retryAfterSeconds: number }
  /** The proof was right, but the account is past its rate limit: no session started. */
  | { outcome: 'limited'; retryAfterSeconds: number };

/** The token endpoint's answer to a sign-in: the tokens, or the error its outcome stands for; `refused` in words. */
export function signInReply(deps: Deps, result: SignIn, refused: string): Reply {
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  if (result.outcome === 'limited') throw accountRateLimited(result.retryAfterSeconds);
  if (result.outcome === 'mfa-required') {
    const description = 'The account has a second factor: send the same request with otp, a code of the ' +
      'authenticator app or a recovery code.';
    throw new OAuthError('mfa_required', description);
  }
  if (result.outcome === 'disabled') throw new OAuthError('account_disabled', 'The account is disabled.');
  if (result.outcome === 'refused') throw new OAuthError('invalid_grant', refused);
  return tokenReply(deps, result.accountPublicId, result.sessionId, result.refreshToken);
}
