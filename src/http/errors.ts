import type { QuotaRefusal } from '../accounts/address-quotas.ts';
import { formatCount } from '../count.ts';

/** A field that failed validation, as RFC 9457 `invalid-params` lists it. */
export type InvalidParam = { name: string; reason: string };

/**
 * Every problem type the service answers with. The URIs are stable identifiers that
 * clients branch on; the README lists them. Titles never change for a given type.
 */
export const problems = {
  malformedBody: { status: 400, slug: 'malformed-body', title: 'The request body is not a JSON object in UTF-8' },
  invalidFields: { status: 400, slug: 'invalid-fields', title: 'One or more fields are invalid' },
  invalidToken: { status: 401, slug: 'invalid-token', title: 'A valid bearer token is required' },
  wrongPassword: { status: 403, slug: 'wrong-password', title: 'The password does not match' },
  notFound: { status: 404, slug: 'not-found', title: 'No such resource' },
  unknownCode: { status: 404, slug: 'unknown-code', title: 'The code is unknown or already used' },
  unknownSession: { status: 404, slug: 'unknown-session', title: 'The account has no session with this id' },
  methodNotAllowed: { status: 405, slug: 'method-not-allowed', title: 'Method not allowed on this resource' },
  nameTaken: { status: 409, slug: 'name-taken', title: 'The name is already taken' },
  codeExpired: { status: 410, slug: 'code-expired', title: 'The code has expired' },
  bodyTooLarge: { status: 413, slug: 'body-too-large', title: 'The request body is too large' },
  unsupportedMediaType: { status: 415, slug: 'unsupported-media-type', title: 'The request body must be application/json' },
  tooSoon: { status: 429, slug: 'too-soon', title: 'A code was requested for this address moments ago' },
  dailyLimit: { status: 429, slug: 'daily-limit', title: 'Too many codes were requested for this address today' },
  rateLimited: { status: 429, slug: 'rate-limited', title: 'Too many requests from this address' },
  throttled: { status: 429, slug: 'throttled', title: 'Too many failed password attempts' },
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
 * The one error a handler throws to answer with something other than success.
 * The server turns it into an RFC 9457 response; any other error becomes a 500.
 */
export class HttpError extends Error {
  readonly problem: Problem;
  readonly detail: string | undefined;
  readonly invalidParams: InvalidParam[] | undefined;
  readonly headers: Record<string, string>;

  constructor(problem: Problem, options: { detail?: string; invalidParams?: InvalidParam[]; headers?: Record<string, string> } = {}) {
    // An HttpError is an answer, not a fault: nobody reads its stack, and capturing one was the
    // largest cost of a rejected request in the profile.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(options.detail ?? problem.title);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'HttpError';
    this.problem = problem;
    this.detail = options.detail;
    this.invalidParams = options.invalidParams;
    this.headers = options.headers ?? {};
  }
}

export type OAuthErrorCode = 'invalid_request' | 'invalid_grant' | 'unsupported_grant_type' | 'temporarily_unavailable' | 'server_error';

/** RFC 6749 §5.2 error, used only by the token endpoint. */
export class OAuthError extends Error {
  readonly code: OAuthErrorCode;

  constructor(code: OAuthErrorCode, description: string) {
    super(description);
    this.name = 'OAuthError';
    this.code = code;
  }
}

export function invalidFields(invalidParams: InvalidParam[]): HttpError {
  return new HttpError(problems.invalidFields, { invalidParams });
}

export function problemBody(error: HttpError): Record<string, unknown> {
  return {
    type: problemType(error.problem),
    title: error.problem.title,
    status: error.problem.status,
    ...(error.detail === undefined ? {} : { detail: error.detail }),
    ...(error.invalidParams === undefined ? {} : { 'invalid-params': error.invalidParams }),
  };
}

/** 429 for a key whose failed password checks must now wait `seconds`. */
export function throttled(seconds: number): HttpError {
  return new HttpError(problems.throttled, { detail: `Try again in ${formatCount(seconds, 'second')}.`, headers: { 'Retry-After': String(seconds) } });
}

/** 429 for an address that asked for a code too recently or too often (address-quotas.ts). */
export function quotaRefused(refusal: QuotaRefusal): HttpError {
  const problem = refusal.reason === 'cooldown' ? problems.tooSoon : problems.dailyLimit;
  return new HttpError(problem, { headers: { 'Retry-After': String(refusal.retryAfterSeconds) } });
}
