import { findAccountByLogin } from '../accounts/accounts.ts';
import { startSession } from '../sessions/sessions.ts';
import { checkPassword, recordWrongPassword } from './password-check.ts';
import { retryOnce, type Client, type UseCaseDeps } from './transaction.ts';

export type SignIn =
  | { outcome: 'signed-in'; accountPublicId: string; sessionId: string; refreshToken: string }
  /** Unknown name, wrong password, or the password changed while it was checked: one answer for all. */
  | { outcome: 'refused' }
  | { outcome: 'throttled'; retryAfterSeconds: number };

/**
 * Password sign-in: starts a session. An unknown name and a wrong password take the same
 * statements and the same scrypt work, and end in the same outcome, so that neither timing nor
 * answer tells which names exist. The session starts in one statement (startSession) that
 * holds the account row, so that it cannot start after a change, reset or deletion that the
 * password check did not see.
 */
export async function signIn(deps: UseCaseDeps, username: string, password: string, client: Client): Promise<SignIn> {
  const account = await findAccountByLogin(deps.sql, username);
  const check = await checkPassword(deps, username, client.address, password, account?.passwordHash ?? null);
  if (check.outcome === 'throttled') return check;
  if (account === null || check.outcome === 'wrong') {
    await recordWrongPassword(deps.sql, account?.id ?? null, client.address, null, deps.clock());
    return { outcome: 'refused' };
  }
  const upgraded = deps.passwords.needsRehash(account.passwordHash) ? await deps.passwords.hash(password) : null;
  const now = deps.clock();
  const started = await retryOnce(() => startSession(deps.sql, account.id, account.passwordHash, upgraded, client, now, deps.config.refreshTtlSeconds));
  if (started === null) return { outcome: 'refused' };
  return { outcome: 'signed-in', accountPublicId: account.publicId, ...started };
}
