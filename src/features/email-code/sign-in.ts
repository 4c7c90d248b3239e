import { reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { checkSecondFactor, useSecondFactor } from '../../core/factor.ts';
import { consumeCodes, hashCode } from '../../core/one-time-codes.ts';
import { recordWrongPassword, throttledAttempt } from '../../core/password-check.ts';
import { startSession, type SessionTokens } from '../../core/sessions.ts';
import { inTransaction, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import type { SignIn } from '../../http/oauth.ts';
import { findCodeAccount, recordSignInCodeRequest, spendSignInCode } from './store.ts';

export type SignInCodeRequest = { outcome: 'requested' } | { outcome: 'refused'; refusal: QuotaRefusal };

/**
 * Asks for a sign-in code for the account with this address (POST /auth/code). Like a reset
 * request, it writes the same rows for every address: its quota ('sign-in', per address) and a
 * record that it was asked; the worker issues and mails the code moments later
 * (store.ts resolveNextSignInCodeRequest), so that neither the answer nor its timing tells
 * whether the address has an account.
 */
export async function requestSignInCode(deps: UseCaseDeps, email: string, clientAddress: string) {
  const now = deps.clock();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<SignInCodeRequest> => {
    const refusal = await reserveAddressRequest(tx, 'sign-in', deps.keys.address(email), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    await recordSignInCodeRequest(tx, email, clientAddress, now);
    return { outcome: 'requested' };
  });
  if (result.outcome === 'requested') deps.addressRequests.wakeLater();
  return result;
}

/**
 * The e-mailed code grant: `email` and its live sign-in code start a session. The code is a
 * guess under the sign-in throttle of the address as typed, as a password is, and passes it
 * only with the second factor where one is on: the mailbox stands in for the password, not
 * for the factor. With a factor on and no otp, 'mfa-required', and the code stays usable for
 * the same request with one; a wrong otp uses the code up (one factor guess a mailed code) and
 * is recorded as the account's failed sign-in. The code is used up in the transaction that
 * starts the session; every such sign-in is announced to the owner (features/sign-in-notices),
 * whatever the account's setting.
 */
export async function signInWithEmailCode(
  deps: UseCaseDeps, email: string, code: string, otp: string | undefined, client: Client,
  takeAllowance: (accountId: string) => number,
): Promise<SignIn> {
  const codeHash = hashCode(code);
  // As a password check counts it (password-check.ts): a success only with the factor, so that
  // no network becomes known, nor is the budget given back, on the mailbox alone.
  const checked = await throttledAttempt(deps, email, client.address, async () => {
    const account = await findCodeAccount(deps.sql, email, codeHash, deps.clock());
    return account === null ? null : { account, factor: await checkSecondFactor(deps, account, otp) };
  }, (result) => result !== null && ['none', 'passed'].includes(result.factor.outcome));
  if (checked !== null && 'outcome' in checked) return checked;
  if (checked === null || checked.factor.outcome === 'wrong') {
    recordWrongPassword(deps, checked?.account.id ?? null, client.address, null, deps.clock());
    if (checked !== null) await spendSignInCode(deps.sql, codeHash);
    return { outcome: 'refused' };
  }
  const { account, factor } = checked;
  if (factor.outcome === 'missing') return { outcome: 'mfa-required' };
  if (factor.outcome === 'throttled') return factor;
  if (account.disabled === true) return { outcome: 'disabled' };
  const wait = takeAllowance(account.id);
  if (wait > 0) return { outcome: 'limited', retryAfterSeconds: wait };
  const proof = factor.outcome === 'passed' ? factor.proof : null;
  const now = deps.clock();
  const { refreshTtlSeconds, sessionsPerAccount } = deps.config;
  const started = await inTransaction<SessionTokens | 'disabled' | null>(deps.sql, async (tx, rollBack) => {
    const session = await startSession(
      tx, account.id, account.passwordHash, null, client, now, refreshTtlSeconds, sessionsPerAccount,
    );
    if (session === null || session === 'disabled') return rollBack(session);
    if (!(await consumeCodes(tx, account.id, 'sign-in', codeHash, now))) return rollBack(null);
    const used = await useSecondFactor(tx, deps, account, proof, client.address, session.sessionId, now);
    return used ? session : rollBack(null);
  });
  if (started === null) return { outcome: 'refused' };
  if (started === 'disabled') return { outcome: 'disabled' };
  await deps.announceSignIn(account.id, client, 'code');
  if (proof?.kind === 'recovery') deps.outbox.wake();
  return { outcome: 'signed-in', accountPublicId: account.publicId, ...started };
}
