import type { Account } from './accounts.ts';
import type { CallerFactorRefusal } from './password-check.ts';
import { findSessionAccount } from './sessions.ts';
import type { Client } from './transaction.ts';
import { clientNetwork } from '../http/rate-limit.ts';
import { HttpError, problems, throttled } from '../http/errors.ts';
import type { Deps, RequestContext } from '../http/router.ts';

/** The signed-in account and the session its token names. */
export type Caller = { account: Account; sessionId: string };

/** `Bearer <token>` (RFC 6750 §2.1): the scheme in any letter case (RFC 9110 §11.1); the token printable ASCII. */
const bearer = /^Bearer +([\x21-\x7e]+) *$/i;

/** The token of an Authorization header of the Bearer scheme, or null. */
export function bearerToken(header: string | undefined): string | null {
  return bearer.exec(header ?? '')?.[1] ?? null;
}

/**
 * The account behind the request's bearer token (RFC 6750). A token is refused when it is
 * malformed, badly signed, expired, or its session was revoked: the session is read with the
 * account on every request, so that a revocation takes effect at once on every instance.
 */
export async function authenticate(ctx: RequestContext, deps: Deps): Promise<Caller> {
  // Node keeps only the first of repeated Authorization headers; which one a proxy in front
  // would have used is unknown, so a request with two is refused rather than guessed at.
  const headers = ctx.req.headersDistinct.authorization;
  if (headers === undefined) {
    throw new HttpError(problems.invalidToken, { headers: { 'WWW-Authenticate': 'Bearer realm="accounts"' } });
  }
  const token = headers.length === 1 ? bearerToken(headers[0]) : null;
  const now = deps.clock();
  const claims = token === null ? null : deps.tokens.verifyToken(token, now);
  const account = claims === null ? null : await findSessionAccount(deps.sql, claims.sub, claims.sid, now);
  if (account === null) throw invalidToken();
  return { account, sessionId: claims!.sid };
}

export function invalidToken(): HttpError {
  return new HttpError(problems.invalidToken, {
    detail: 'The bearer token is malformed, expired or revoked.',
    headers: { 'WWW-Authenticate': 'Bearer realm="accounts", error="invalid_token"' },
  });
}

/** The refusals that any use case of a signed-in caller may return, to one answer each. */
const secretRefusals = {
  'wrong-password': problems.wrongPassword, 'otp-required': problems.otpRequired, 'wrong-otp': problems.wrongOtp,
} as const;

export function callerRefusal(refusal: CallerFactorRefusal): HttpError {
  if (refusal.outcome === 'throttled') return throttled(refusal.retryAfterSeconds);
  // The caller's session was ended meanwhile (a concurrent password change, say), which won, and this token with it.
  if (refusal.outcome === 'session-ended') return invalidToken();
  return new HttpError(secretRefusals[refusal.outcome]);
}

/**
 * Takes one request from an allowance (ACCOUNT_RATE_LIMIT a minute, per instance): 0 to go on,
 * else the seconds to wait. A sign-in counts in the account's allowance from its network
 * (signInAllowance), a refresh or a session listing in its session's (sessionAllowance): what
 * one session does never spends what another session, or the owner's next sign-in from
 * elsewhere, needs. One account costs at most SESSIONS_PER_ACCOUNT sessions' worth, plus its
 * sign-ins, each counted only once the caller has shown it may act for the account.
 */
export function takeAccountAllowance(deps: Deps, allowance: string): number {
  return deps.accountRateLimiter?.take(allowance, Date.now()) ?? 0;
}

/** The allowance of an account's sign-ins from the network of `clientAddress`. */
export const signInAllowance = (accountId: string, address: string) => `sign-in ${accountId} ${clientNetwork(address)}`;

/** The allowance of one session's own requests. */
export const sessionAllowance = (sessionId: string) => `session ${sessionId}`;

/** The client a request came from, as the use cases record it. */
export function clientOf(ctx: RequestContext): Client {
  return { address: ctx.clientAddress, userAgent: ctx.req.headers['user-agent'] ?? '' };
}
