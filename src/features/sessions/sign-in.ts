import { findAccountByLogin, findPasswordHash } from '../../core/accounts.ts';
import { rememberClient } from '../../core/login-throttle.ts';
import { clientNetwork } from '../../http/rate-limit.ts';
import { startSession, type SessionTokens } from '../../core/sessions.ts';
import type { Sql, Transaction } from '../../storage/db.ts';
import { checkPassword, recordWrongPassword, resetIdentifier, signedInIdentifier } from '../../core/password-check.ts';
import { checkSecondFactor, useSecondFactor } from '../../core/factor.ts';
import { inTransaction, retryOnce, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import type { SignIn } from '../../http/oauth.ts';

/**
 * Password sign-in: starts a session. An unknown name and a wrong password take the same
 * statements and the same scrypt work, and end in the same outcome, so that neither timing nor
 * answer tells which names exist. The session starts in one statement (startSession) that
 * holds the account row, so that it cannot start after a change, reset or deletion that the
 * password check did not see. `takeAllowance` takes one sign-in from the account's allowance (0 to go
 * on, else the seconds to wait).
 */
export async function signIn(
  deps: UseCaseDeps, username: string, password: string, otp: string | undefined, client: Client,
  takeAllowance: (accountId: string) => number = () => 0,
): Promise<SignIn> {
  const account = await findAccountByLogin(deps.sql, username);
  const checkFactor = account === null ? undefined : () => checkSecondFactor(deps, account, otp);
  const storedHash = account?.passwordHash ?? null;
  const check = await checkPassword(deps, username, client.address, password, storedHash, checkFactor);
  if (check.outcome === 'throttled') return check;
  if (check.outcome === 'wrong' && check.factor === 'missing') return { outcome: 'mfa-required' };
  if (account === null || check.outcome === 'wrong') {
    recordWrongPassword(deps, account?.id ?? null, client.address, null, deps.clock());
    return { outcome: 'refused' };
  }
  // Said only once the password and the factor are proven, so that a stranger learns nothing from it.
  if (account.disabled === true) return { outcome: 'disabled' };
  // Counted only once the password is right, so that strangers cannot spend the owner's allowance.
  const wait = takeAllowance(account.id);
  if (wait > 0) return { outcome: 'limited', retryAfterSeconds: wait };
  const upgraded = deps.passwords.needsRehash(account.passwordHash) ? await deps.passwords.hash(password) : null;
  const now = deps.clock();
  const { refreshTtlSeconds, sessionsPerAccount } = deps.config;
  const session = (sql: Sql | Transaction, checkedHash: string) =>
    startSession(sql, account.id, checkedHash, upgraded, client, now, refreshTtlSeconds, sessionsPerAccount);
  const { proof } = check;
  // The otp is used up in the transaction that starts the session, so that a refusal (the
  // allowance above, a changed password, a disabled account) or a lost race spends no code.
  type Started = SessionTokens | 'disabled' | 'code-used' | null;
  const startWithFactor = (checkedHash: string) => inTransaction<Started>(deps.sql, async (tx, rollBack) => {
    const started = await session(tx, checkedHash);
    if (started === null || started === 'disabled') return started;
    const used = await useSecondFactor(tx, deps, account, proof, client.address, started.sessionId, now);
    return used ? started : rollBack('code-used');
  });
  const start = (checkedHash: string) =>
    proof === null ? retryOnce(() => session(deps.sql, checkedHash)) : startWithFactor(checkedHash);
  let started = await start(account.passwordHash);
  if (started === 'code-used') return { outcome: 'refused' };
  if (started === null) {
    // The stored hash changed after it was read. The start-up wrapping (hash-wrapping.ts) and a
    // concurrent sign-in's upgrade store another hash of the same password, so the password is
    // checked once more against the hash stored now: the right password still signs in. A
    // changed or reset password fails that check, and a deleted account has no hash. A session
    // only ever starts on the very hash that the password was checked against.
    const stored = await findPasswordHash(deps.sql, account.id);
    const changed = stored !== null && stored !== account.passwordHash;
    if (changed && (await deps.passwords.verify(password, stored))) started = await start(stored);
  }
  if (started === null || started === 'code-used') return { outcome: 'refused' };
  if (started === 'disabled') return { outcome: 'disabled' };
  // The network becomes known to the name and the address alike, whichever was typed (the
  // password check remembered that one): the owner's way past a spent reset quota
  // (features/password/request-reset.ts) starts from either.
  const untyped = username.toLowerCase() === account.name ? account.email : account.name;
  const network = deps.keys.client(clientNetwork(client.address));
  // Known to the account's own budget too, so that a session that spends it with wrong passwords
  // (a stolen token) does not hold up the owner's password checks from the networks it signs in from.
  const owned = [untyped, resetIdentifier(account.email), signedInIdentifier(account)];
  const known = owned.map((identifier) => deps.keys.loginIdentifier(identifier));
  await rememberClient(deps.sql, known, network, now);
  await deps.announceSignIn(account.id, client, 'password');
  if (proof?.kind === 'recovery') deps.outbox.wake();
  return { outcome: 'signed-in', accountPublicId: account.publicId, ...started };
}
