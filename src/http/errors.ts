import type { QuotaRefusal } from '../accounts/address-quotas.ts';
import { formatCount } from '../format.ts';
import type { InvalidParam } from '../validation.ts';

/**
 * Every problem type the service answers with. The URIs are stable identifiers that
 * clients branch on; the README lists them. Titles never change for a given type.
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
  methodNotAllowed: { status: 405, slug: 'method-not-allowed', title: 'Method not allowed on this resource' },
  nameTaken: { status: 409, slug: 'name-taken', title: 'The name is already taken' },
  totpActive: { status: 409, slug: 'totp-active', title: 'A second factor is already active' },
  totpNotPending: { status: 409, slug: 'totp-not-pending', title: 'No second factor is waiting for confirmation' },
  totpNotActive: { status: 409, slug: 'totp-not-active', title: 'No second factor is active' },
  emailTaken: { status: 409, slug: 'email-taken', title: 'The e-mail address was taken by another account meanwhile' },
  codeExpired: { status: 410, slug: 'code-expired', title: 'The code has expired' },
  bodyTooLarge: { status: 413, slug: 'body-too-large', title: 'The request body is too large' },
  unsupportedMediaType: { status: 415, slug: 'unsupported-media-type', title: 'The request body must be application/json' },
  tooSoon: { status: 429, slug: 'too-soon', title: 'A code was requested for this address moments ago' },
  dailyLimit: { status: 429, slug: 'daily-limit', title: 'Too many codes were requested for this address today' },
  rateLimited: { status: 429, slug: 'rate-limited', title: 'Too many requests from this address' },
  throttled: { status: 429, slug: 'throttled', title: 'Too many failed password or one-time code attempts' },
  accountRateLimited: { status: 429, slug: 'account-rate-limited', title: 'Too many sign-ins, refreshes or session listings for this account' },
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
 * turns it into an RFC 9457 response, and anything else thrown becomes a 500.
 *
 * It is an answer, not a fault, so it is deliberately not an Error: nobody reads its stack,
 * and an Error costs a request its construction even with the stack capture switched off
 * (three times a plain object's, in a loop that throws and catches one). `instanceof
 * HttpError` is what tells it apart from faults.
 */
export class HttpError {
  readonly problem: Problem;
  readonly detail: string | undefined;
  readonly invalidParams: InvalidParam[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(problem: Problem, options: { detail?: string; invalidParams?: InvalidParam[]; headers?: Record<string, string> } = {}) {
    this.problem = problem;
    this.detail = options.detail;
    this.invalidParams = options.invalidParams;
    this.headers = options.headers;
  }

  /** What a problem's `detail` says, or its title; for tests and for anything that prints it. */
  get message(): string {
    return this.detail ?? this.problem.title;
  }
}

/** The codes a handler of the token endpoint answers with; the server maps other statuses itself (server.ts, oauthReply). */
export type OAuthErrorCode = 'invalid_request' | 'invalid_grant' | 'mfa_required' | 'account_disabled' | 'unsupported_grant_type';

/** RFC 6749 §5.2 error, used only by the token endpoint; an answer like HttpError, and not an Error for the same reason. */
export class OAuthError {
  readonly code: OAuthErrorCode;
  readonly message: string;

  constructor(code: OAuthErrorCode, description: string) {
    this.code = code;
    this.message = description;
  }
}

export function invalidFields(invalidParams: InvalidParam[]): HttpError {
  return new HttpError(problems.invalidFields, { invalidParams });
}

/**
 * The RFC 9457 body, as JSON. Its start (type, title, status) is the same for every answer of a
 * problem, so it is serialised once per problem; only what varies is serialised per answer.
 */
export function problemJson(error: HttpError): string {
  let json = problemStarts.get(error.problem)!;
  if (error.detail !== undefined) json += `,"detail":${JSON.stringify(error.detail)}`;
  if (error.invalidParams !== undefined) json += `,"invalid-params":[${error.invalidParams.map(invalidParamJson).join(',')}]`;
  return `${json}}`;
}

/**
 * What JSON.stringify writes for an invalid param. Names and reasons come from a few schemas, so
 * each pair is serialised once: serialising them was the largest cost of the service's own in
 * answering a rejected body. The cache is bounded all the same, because an unknown field's name
 * comes from the client.
 */
const invalidParamJsonCache = new Map<string, Map<string, string>>();
let invalidParamJsonCount = 0;
function invalidParamJson({ name, reason }: InvalidParam): string {
  let byReason = invalidParamJsonCache.get(name);
  let json = byReason?.get(reason);
  if (json === undefined) {
    json = JSON.stringify({ name, reason });
    if (invalidParamJsonCount < 256) {
      if (byReason === undefined) invalidParamJsonCache.set(name, (byReason = new Map()));
      byReason.set(reason, json);
      invalidParamJsonCount += 1;
    }
  }
  return json;
}

const problemStarts = new Map<Problem, string>(
  Object.values(problems).map((problem) => [problem, JSON.stringify({ type: problemType(problem), title: problem.title, status: problem.status }).slice(0, -1)]),
);

/** 429 for a key whose failed password checks must now wait `seconds`. */
export function throttled(seconds: number): HttpError {
  return new HttpError(problems.throttled, { detail: `Try again in ${formatCount(seconds, 'second')}.`, headers: { 'Retry-After': String(seconds) } });
}

/** 429 for an account past ACCOUNT_RATE_LIMIT. */
export function accountRateLimited(seconds: number): HttpError {
  return new HttpError(problems.accountRateLimited, { detail: `Try again in ${formatCount(seconds, 'second')}.`, headers: { 'Retry-After': String(seconds) } });
}

/** 429 for an address that asked for a code too recently or too often (address-quotas.ts). */
export function quotaRefused(refusal: QuotaRefusal): HttpError {
  const problem = refusal.reason === 'cooldown' ? problems.tooSoon : problems.dailyLimit;
  return new HttpError(problem, { headers: { 'Retry-After': String(refusal.retryAfterSeconds) } });
}
