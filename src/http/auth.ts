import type { Account } from '../accounts/accounts.ts';
import { reserveAttempt, settleSuccess } from '../accounts/login-throttle.ts';
import { findSessionAccount } from '../sessions/sessions.ts';
import { HttpError, problems, throttled } from './errors.ts';
import type { Deps, RequestContext } from './router.ts';

/** The signed-in account and the session its token names. */
export type Caller = { account: Account; sessionId: string };

const bearer = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i;

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
  const token = headers.length === 1 ? bearer.exec(headers[0]!)?.[1] : undefined;
  const now = deps.clock();
  const claims = token === undefined ? null : deps.tokens.verifyToken(token, now);
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

/**
 * Checks a password under the sign-in throttle (login-throttle.ts) of `identifier` as typed and
 * the client's address: 429 while they must wait, decided before the password is checked so
 * that a throttled guess costs no scrypt work and learns nothing. `stored` null (no account)
 * does the same work and answers false. The throttle never looks at the account, so it acts
 * the same for names that exist and names that do not.
 */
export async function checkThrottledPassword(
  deps: Deps,
  ctx: RequestContext,
  identifier: string,
  password: string,
  stored: string | null,
  // Second factor (issue 23): run only once the password is proven; false counts the attempt as a
  // failure, exactly like a wrong password, so that code guesses spend the same budget.
  secondFactor?: () => Promise<boolean>,
): Promise<boolean> {
  return checkThrottled(deps, ctx, identifier, async () => (await deps.passwords.verify(password, stored)) && (secondFactor === undefined || (await secondFactor())));
}

/**
 * Runs `check` (a guess at a secret) under the sign-in throttle of `identifier` and the client's
 * address: 429 before the check while they must wait; a false answer stays counted as a failure.
 */
export async function checkThrottled(deps: Deps, ctx: RequestContext, identifier: string, check: () => Promise<boolean>): Promise<boolean> {
  const keys = { identifier: deps.keys.loginIdentifier(identifier), client: deps.keys.client(ctx.clientAddress) };
  const perHour = deps.config.loginFailuresPerHour;
  const wait = await reserveAttempt(deps.sql, keys, perHour, deps.clock());
  if (wait > 0) throw throttled(wait);
  const valid = await check();
  if (valid) await settleSuccess(deps.sql, keys, perHour);
  return valid;
}

/**
 * The throttle identifier of a password check made with a token (old_pwd, deletion): the
 * account itself, apart from its name and address. Why: strangers spend the budget of a name
 * by guessing at sign-in, and that must not keep the signed-in owner from changing the
 * password or deleting the account; a token thief's guesses are bounded all the same.
 */
export function signedInIdentifier(account: Pick<Account, 'publicId'>): string {
  return `account:${account.publicId}`;
}

/** Every throttle key of an account, for a reset or a deletion to clear. */
export function throttleIdentifiers(deps: Deps, account: Pick<Account, 'publicId' | 'name' | 'email'>): Buffer[] {
  return [account.name, account.email, signedInIdentifier(account)].map((identifier) => deps.keys.loginIdentifier(identifier));
}
