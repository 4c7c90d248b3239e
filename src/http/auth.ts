import { findAccountById, type Account } from '../accounts.ts';
import { clearFailures, recordFailure, throttleWaitSeconds } from '../login-throttle.ts';
import { HttpError, problems, throttled } from './errors.ts';
import type { Deps, RequestContext } from './router.ts';

/**
 * The account behind the request's bearer token (RFC 6750). A token is refused when it is
 * malformed, badly signed, expired, or older than the account's last password change.
 */
export async function authenticate(ctx: RequestContext, deps: Deps): Promise<Account> {
  const header = ctx.req.headers.authorization;
  if (header === undefined) {
    throw new HttpError(problems.invalidToken, { headers: { 'WWW-Authenticate': 'Bearer realm="accounts"' } });
  }
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header);
  const claims = match?.[1] === undefined ? null : deps.tokens.verifyToken(match[1], deps.clock());
  const account = claims !== null && /^[0-9]{1,18}$/.test(claims.sub) ? await findAccountById(deps.sql, claims.sub) : null;
  if (account === null || account.credentialVersion !== claims?.ver) throw invalidToken();
  return account;
}

export function invalidToken(): HttpError {
  return new HttpError(problems.invalidToken, {
    detail: 'The bearer token is malformed, expired or revoked.',
    headers: { 'WWW-Authenticate': 'Bearer realm="accounts", error="invalid_token"' },
  });
}

/**
 * Checks a password under the sign-in throttle of `key`: 429 while the key must wait, checked
 * before the password so that a throttled guess costs no scrypt work and learns nothing; then a
 * failure is counted, or a success clears the count. `stored` null (no account) does the same
 * work and answers false.
 */
export async function checkThrottledPassword(deps: Deps, key: string, password: string, stored: string | null): Promise<boolean> {
  const now = deps.clock();
  const wait = await throttleWaitSeconds(deps.sql, key, now);
  if (wait > 0) throw throttled(wait);
  const valid = await deps.passwords.verify(password, stored);
  if (valid) await clearFailures(deps.sql, key);
  else await recordFailure(deps.sql, key, now);
  return valid;
}
