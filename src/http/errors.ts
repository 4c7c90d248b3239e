import type { QuotaRefusal } from '../core/address-quotas.ts';
import { formatCount } from '../support/format.ts';
import type { InvalidParam } from './validate.ts';

/**
 * Every problem type the service answers with. The URIs are stable identifiers that
 * clients branch on; docs/api.md lists them. Titles never change for a given type.
 */
export const problems = {
  malformedBody: { status: 400, slug: 'malformed-body', title: 'The request body is not a JSON object in UTF-8' },
  invalidFields: { status: 400, slug: 'invalid-fields', title: 'One or more fields are invalid' },
  invalidToken: { status: 401, slug: 'invalid-token', title: 'A valid bearer token is required' },
  wrongPassword: { status: 403, slug: 'wrong-password', title: 'The password does not match' },
  otpRequired: { status: 403, slug: 'otp-required', title: 'The account has a second factor: otp is required' },
  wrongOtp: { status: 403, slug: 'wrong-otp', title: 'The one-time code is wrong, already used or expired' },
  notFound: { status: 404, slug: 'not-found', title: 'No such resource' },
  unknownCode: { status: 404, slug: 'unknown-code', title: 'The code is unknown or already used' },
  unknownSession: { status: 404, slug: 'unknown-session', title: 'The account has no session with this id' },
  passkeysOff: {
    status: 404, slug: 'passkeys-not-configured',
    title: 'Passkeys are off: WEBAUTHN_RP_ID and WEBAUTHN_ORIGINS are not set',
  },
  unknownChallenge: {
    status: 404, slug: 'unknown-challenge', title: 'The challenge is unknown, expired or already used',
  },
  unknownPasskey: { status: 404, slug: 'unknown-passkey', title: 'The account has no passkey with this id' },
  wrongEmailCode: {
    status: 403, slug: 'wrong-email-code', title: 'The e-mailed code is wrong, expired or already used',
  },
  invalidPasskey: { status: 400, slug: 'invalid-passkey', title: 'The credential did not pass verification' },
  passkeyLimit: { status: 409, slug: 'passkey-limit', title: 'The account holds the most passkeys it may (20)' },
  passkeyRegistered: { status: 409, slug: 'passkey-registered', title: 'This credential is registered already' },
  unknownAttempt: {
    status: 400, slug: 'unknown-attempt',
    title: 'The sign-in attempt is unknown, expired, already used or was started in another browser',
  },
  invalidLink: {
    status: 400, slug: 'invalid-link',
    title: 'The code is unknown, expired, used or not this session\'s, or the identity is linked already',
  },
  unknownIdentity: { status: 404, slug: 'unknown-identity', title: 'The account has no identity with this id' },
  providerUnavailable: {
    status: 502, slug: 'provider-unavailable', title: 'The OpenID provider could not be reached or answered wrongly',
  },
  methodNotAllowed: { status: 405, slug: 'method-not-allowed', title: 'Method not allowed on this resource' },
  nameTaken: { status: 409, slug: 'name-taken', title: 'The name is already taken' },
  totpActive: { status: 409, slug: 'totp-active', title: 'A second factor is already active' },
  totpNotPending: { status: 409, slug: 'totp-not-pending', title: 'No second factor is waiting for confirmation' },
  totpNotActive: { status: 409, slug: 'totp-not-active', title: 'No second factor is active' },
  emailTaken: { status: 409, slug: 'email-taken', title: 'The e-mail address was taken by another account meanwhile' },
  codeExpired: { status: 410, slug: 'code-expired', title: 'The code has expired' },
  bodyTooLarge: { status: 413, slug: 'body-too-large', title: 'The request body is too large' },
  unsupportedMediaType: {
    status: 415, slug: 'unsupported-media-type', title: 'The request body must be application/json',
  },
  tooSoon: { status: 429, slug: 'too-soon', title: 'A code was requested for this address moments ago' },
  dailyLimit: { status: 429, slug: 'daily-limit', title: 'Too many codes were requested for this address today' },
  rateLimited: { status: 429, slug: 'rate-limited', title: 'Too many requests from this address' },
  throttled: { status: 429, slug: 'throttled', title: 'Too many failed password or one-time code attempts' },
  accountRateLimited: {
    status: 429, slug: 'account-rate-limited',
    title: 'Too many sign-ins, refreshes or session listings for this account',
  },
  unavailable: { status: 503, slug: 'unavailable', title: 'The service is temporarily unavailable' },
  overloaded: { status: 503, slug: 'overloaded', title: 'The service is overloaded' },
  internal: { status: 500, slug: 'internal', title: 'Internal server error' },
} as const;

export type Problem = (typeof problems)[keyof typeof problems];

export const problemTypePrefix = 'urn:account-service:problem:';

export function problemType(problem: Problem): string {
  return problemTypePrefix + problem.slug;
}

/**
 * The one answer a handler throws to reply with something other than success; the server
 * turns it into an RFC 9457 response, and anything else thrown becomes a logged 500.
 * `instanceof HttpError` is what tells an answer apart from a fault.
 *
 * An answer's stack is never logged or read, so none is captured (its cost: docs/performance.md).
 */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly problem: Problem;
  readonly detail: string | undefined;
  readonly invalidParams: InvalidParam[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    problem: Problem,
    options: { detail?: string; invalidParams?: InvalidParam[]; headers?: Record<string, string> } = {},
  ) {
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(options.detail ?? problem.title);
    Error.stackTraceLimit = stackTraceLimit;
    this.problem = problem;
    this.detail = options.detail;
    this.invalidParams = options.invalidParams;
    this.headers = options.headers;
  }
}

/** The codes a token endpoint handler answers with; the server maps other statuses itself (server.ts, oauthReply). */
export type OAuthErrorCode =
  | 'invalid_request' | 'invalid_grant' | 'mfa_required' | 'account_disabled' | 'unsupported_grant_type'
  | 'unknown_identity';

/** RFC 6749 §5.2 error, used only by the token endpoint; an answer like HttpError. */
export class OAuthError extends Error {
  override name = 'OAuthError';
  readonly code: OAuthErrorCode;

  constructor(code: OAuthErrorCode, description: string) {
    super(description);
    this.code = code;
  }
}

export function invalidFields(invalidParams: InvalidParam[]): HttpError {
  return new HttpError(problems.invalidFields, { invalidParams });
}

/** 429 for a key whose failed password checks must now wait `seconds`. */
export function throttled(seconds: number): HttpError {
  return tryAgainIn(problems.throttled, seconds);
}

/** 429 for an account past ACCOUNT_RATE_LIMIT. */
export function accountRateLimited(seconds: number): HttpError {
  return tryAgainIn(problems.accountRateLimited, seconds);
}

function tryAgainIn(problem: Problem, seconds: number): HttpError {
  const headers = { 'Retry-After': String(seconds) };
  return new HttpError(problem, { detail: `Try again in ${formatCount(seconds, 'second')}.`, headers });
}

/** 429 for an address that asked for a code too recently or too often (address-quotas.ts). */
export function quotaRefused(refusal: QuotaRefusal): HttpError {
  const problem = refusal.reason === 'cooldown' ? problems.tooSoon : problems.dailyLimit;
  return new HttpError(problem, { headers: { 'Retry-After': String(refusal.retryAfterSeconds) } });
}
