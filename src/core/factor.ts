import type { Account } from './accounts.ts';
import { refundBudget, reserveFactorGuess } from './login-throttle.ts';
import { hashRecoveryCode } from './recovery-codes.ts';
import {
  findSecondFactor, hasRecoveryCode, resealFactor, useRecoveryCode, useTimeStep, type SecondFactor,
} from './factor-store.ts';
import {
  checkCallerPassword, factorIdentifier, type CallerCheck, type FactorProof, type SecondFactorOutcome,
} from './password-check.ts';
import { recordEvent } from './security-events.ts';
import { matchingStep, totpCodePattern } from './totp.ts';
import type { Client, UseCaseDeps } from './transaction.ts';
import { recoveryCodeUsedMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import type { Sql, Transaction } from '../storage/db.ts';

/**
 * The second factor's check (TOTP, RFC 6238, or a recovery code), which every use case that asks
 * for the factor makes once the password is proven; enrolling, confirming and disabling a factor
 * are the second-factor feature's.
 */
type Caller = { account: Account; sessionId: string };
type FactorAccount = Pick<Account, 'id' | 'publicId' | 'name' | 'email' | 'locale' | 'factorActive'>;

/**
 * Checks the second factor of an account whose password was just proven; never call it before,
 * as its answer tells whether the account has a factor (what sign-in reads with the account is
 * not looked at before either). `otp` must match `patterns.otp` (core/fields.ts). Each guess
 * takes a token of the account's own budget first (factorIdentifier), which no known network
 * passes: at most LOGIN_FAILURES_PER_HOUR guesses an hour, wherever they are made. A right code
 * gives it back and is answered as a proof, not used: the caller uses it (useSecondFactor) in
 * the transaction that acts on it.
 */
export async function checkSecondFactor(
  deps: UseCaseDeps, account: FactorAccount, otp: string | undefined,
): Promise<SecondFactorOutcome> {
  // Sign-in read whether a factor is active with the account; the factor row is read only for one.
  const factor = account.factorActive === false ? null : await findSecondFactor(deps.sql, account.id);
  if (factor === null || !factor.active) return { outcome: 'none' };
  if (otp === undefined) return { outcome: 'missing' };
  const budget = deps.keys.loginIdentifier(factorIdentifier(account));
  const perHour = deps.config.loginFailuresPerHour;
  const wait = await reserveFactorGuess(deps.sql, budget, perHour, deps.clock());
  if (wait > 0) return { outcome: 'throttled', retryAfterSeconds: wait };
  const proof = await matchFactor(deps, account.id, factor, otp);
  if (proof === null) return { outcome: 'wrong' };
  await refundBudget(deps.sql, budget, perHour);
  return { outcome: 'passed', proof };
}

/** The proof of a right code: a TOTP step later than the last used, or an unused recovery code; null otherwise. */
async function matchFactor(
  deps: UseCaseDeps, accountId: string, factor: SecondFactor, otp: string,
): Promise<FactorProof | null> {
  if (totpCodePattern.test(otp)) {
    const secret = await openActiveSecret(deps, accountId, factor.sealedSecret);
    const step = secret === null ? null : matchingStep(secret, otp, deps.clock());
    if (step === null || (factor.lastUsedStep !== null && step <= factor.lastUsedStep)) return null;
    return { kind: 'step', step };
  }
  const codeHash = hashRecoveryCode(otp);
  return (await hasRecoveryCode(deps.sql, accountId, codeHash)) ? { kind: 'recovery', codeHash } : null;
}

/**
 * Uses up a checked code (checkSecondFactor's proof) in the caller's transaction, after the
 * account row: a TOTP step in one conditional statement, a recovery code by its delete, with its
 * event and the owner's notice (the caller wakes the outbox once it commits). False when a
 * concurrent request used it first: the caller rolls back. A null proof (no factor) passes.
 */
export async function useSecondFactor(
  tx: Transaction, deps: UseCaseDeps, account: FactorAccount, proof: FactorProof | null,
  clientAddress: string, sessionId: string | null, now: Date,
): Promise<boolean> {
  if (proof === null) return true;
  if (proof.kind === 'step') return useTimeStep(tx, account.id, proof.step);
  const left = await useRecoveryCode(tx, account.id, proof.codeHash);
  if (left === null) return false;
  await recordEvent(tx, account.id, 'recovery-code-used', clientAddress, sessionId, now);
  await enqueueMail(tx, recoveryCodeUsedMail(account, now, clientAddress, left), deps.mailer, now);
  return true;
}

/**
 * The password check of a signed-in caller (checkCallerPassword), then, once the password is
 * proven and under the same throttle, the second factor: an active factor needs a right `otp`.
 * A valid check's `factor` tells what the second factor found ('none': the account has none).
 */
export function checkPasswordAndFactor(
  deps: UseCaseDeps, caller: Caller, password: string, otp: string | undefined, client: Client,
): Promise<CallerCheck> {
  const checkFactor = () => checkSecondFactor(deps, caller.account, otp);
  return checkCallerPassword(deps, caller, password, client, checkFactor);
}

/** Whether the account has an active factor (GET /acc/me). */
export async function hasActiveFactor(sql: Sql, account: FactorAccount): Promise<boolean> {
  if (account.factorActive !== undefined) return account.factorActive;
  return (await findSecondFactor(sql, account.id))?.active ?? false;
}

/**
 * The secret of an active factor; null if no configured key opens it (its encryption key was
 * removed before the re-seal). One sealed under an old key is sealed again under the current one.
 */
async function openActiveSecret(deps: UseCaseDeps, accountId: string, sealed: Buffer): Promise<Buffer | null> {
  const opened = deps.sealer.open(sealed, 'totp-secret', accountId);
  if (opened === null) return null;
  if (!opened.current) {
    await resealFactor(deps.sql, accountId, sealed, deps.sealer.seal(opened.plaintext, 'totp-secret', accountId));
  }
  return opened.plaintext;
}
