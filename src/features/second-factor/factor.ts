import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { forgetKnownClients, refundBudget, reserveFactorGuess } from '../../core/login-throttle.ts';
import { consumeCodes, generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import { generateRecoveryCode, hashRecoveryCode, recoveryCodeCount } from '../../core/recovery-codes.ts';
import {
  activateFactor, findSecondFactor, hasRecoveryCode, removeFactor, resealFactor, startEnrollment, useRecoveryCode,
  useTimeStep, type SecondFactor,
} from '../../core/factor-store.ts';
import { recordEvent } from '../../core/security-events.ts';
import { base32Encode, generateSecret, matchingStep, otpauthUri, totpCodePattern } from '../../core/totp.ts';
import { noticeMail, recoveryCodeUsedMail, totpCodeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import type { Sql, Transaction } from '../../storage/db.ts';
import { endSessions } from '../../core/end-sessions.ts';
import {
  checkCallerPassword, factorIdentifier, signedInIdentifier, throttledAttempt, throttleKeys,
  type CallerCheck, type CallerFactorRefusal, type CallerRefusal, type FactorProof, type SecondFactorOutcome,
} from '../../core/password-check.ts';
import { inTransaction, lockAccountIfSessionLives, wakeWorkers, type Client, type UseCaseDeps } from '../../core/transaction.ts';

/**
 * The second factor (TOTP, RFC 6238): enroll, confirm, disable, and the check that sign-in and
 * deletion make once the password is proven. Each owns its transaction and follows the lock
 * order of transaction.ts: the request quota, the account row, sessions, then codes (the factor,
 * its recovery codes, the e-mailed code), events, outbox.
 *
 * The mailbox is the root of recovery: a factor survives a password reset, so enrolling one
 * needs the password and a code mailed to the account's address, as adding a passkey does. A
 * password thief can no longer tie the account to an app of their own and keep it past a reset.
 */
type Caller = { account: Account; sessionId: string };
type FactorAccount = Pick<Account, 'id' | 'publicId' | 'name' | 'email' | 'locale' | 'factorActive'>;

/** How long the code mailed by an enrollment works: time to set up the app and read the mail. */
export const enrollmentCodeTtlSeconds = 15 * 60;

export type Enrollment =
  | { outcome: 'enrolled'; secret: string; uri: string }
  | { outcome: 'active' }
  | { outcome: 'refused'; refusal: QuotaRefusal }
  | CallerFactorRefusal;

/**
 * Starts a pending enrollment, replacing a pending one, and mails a code to the account's
 * address that confirming needs. The password is required (throttled like a sign-in), so that a
 * stolen token alone cannot start one; the request counts in a quota of its own (once a minute,
 * ten a day), as each one sends mail. A refusal rolls back: it spends no quota.
 */
export async function enrollTotp(
  deps: UseCaseDeps, caller: Caller, password: string, client: Client,
): Promise<Enrollment> {
  const { account } = caller;
  const check = await checkCallerPassword(deps, caller, password, client);
  if (check.outcome !== 'valid') return check;
  const secret = generateSecret();
  const sealed = deps.sealer.seal(secret, 'totp-secret', account.id);
  const code = generateCode();
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + enrollmentCodeTtlSeconds * 1000);
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<Enrollment> => {
    const refusal = await reserveAddressRequest(tx, 'totp', accountQuotaKey(deps.keys, account.publicId), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    if (!(await lockAccountIfSessionLives(tx, caller))) return rollBack({ outcome: 'session-ended' });
    if (!(await startEnrollment(tx, account.id, sealed, now))) return rollBack({ outcome: 'active' });
    await storeCode(tx, 'totp', account.id, hashCode(code), expiresAt, now);
    await enqueueMail(tx, totpCodeMail(account, code, expiresAt, now, client.address), deps.mailer, now);
    const uri = otpauthUri(secret, deps.config.totpIssuer, account.name);
    return { outcome: 'enrolled', secret: base32Encode(secret), uri };
  });
  if (result.outcome === 'enrolled') deps.outbox.wake();
  return result;
}

export type Confirmation =
  | { outcome: 'confirmed'; recoveryCodes: string[] }
  | { outcome: 'not-pending' | 'active' | 'wrong' | 'wrong-email-code' }
  | Exclude<CallerRefusal, { outcome: 'wrong-password' }>;

/**
 * Activates the pending factor with its first right code and the code mailed by the enrollment:
 * recovery codes made, every other session of the account ended, the networks known to its
 * identifiers forgotten (whoever signed in with the password alone must now pass the factor
 * from a spent budget too), event recorded, owner told. Wrong codes count in the throttle of the
 * signed-in account, so that a stolen token cannot guess its way to the recovery codes. A wrong
 * code of either kind uses up nothing.
 */
export async function confirmTotp(
  deps: UseCaseDeps, caller: Caller, code: string, emailCode: string, client: Client,
): Promise<Confirmation> {
  const attempt = () => activateWithCode(deps, caller, code, emailCode, client);
  const passed = (result: Confirmation) => result.outcome !== 'wrong' && result.outcome !== 'wrong-email-code';
  return throttledAttempt(deps, signedInIdentifier(caller.account), client.address, attempt, passed);
}

async function activateWithCode(
  deps: UseCaseDeps, caller: Caller, code: string, emailCode: string, client: Client,
): Promise<Confirmation> {
  const { account, sessionId } = caller;
  const factor = await findSecondFactor(deps.sql, account.id);
  if (factor === null) return { outcome: 'not-pending' };
  if (factor.active) return { outcome: 'active' };
  const now = deps.clock();
  const secret = deps.sealer.open(factor.sealedSecret, 'totp-secret', account.id)?.plaintext;
  const step = secret === undefined ? null : matchingStep(secret, code, now);
  if (step === null) return { outcome: 'wrong' };
  const recoveryCodes = Array.from({ length: recoveryCodeCount }, generateRecoveryCode);
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<Confirmation> => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'session-ended' };
    const webhook = deps.webhooks.event('second_factor.enabled', account.publicId, now, { method: 'totp' });
    const event = { type: 'totp-enabled' as const, clientAddress: client.address, sessionId };
    // Every other session ends: one started with the password alone must now pass the factor.
    const others = { accountId: account.id, sessionId: null, keptSessionId: sessionId, record: 'always' as const, now };
    await endSessions(tx, { ...others, event, webhook });
    const mailed = await consumeCodes(tx, account.id, 'totp', hashCode(emailCode), now);
    if (!mailed) return rollBack({ outcome: 'wrong-email-code' });
    // Not pending: replaced by a new enrollment or confirmed by a concurrent request meanwhile.
    const hashes = recoveryCodes.map(hashRecoveryCode);
    const activated = await activateFactor(tx, account.id, factor.sealedSecret, step, hashes, now);
    if (!activated) return rollBack({ outcome: 'not-pending' });
    await forgetKnownClients(tx, throttleKeys(deps, account));
    await enqueueMail(tx, noticeMail('totp-enabled', account, now, client.address), deps.mailer, now);
    return { outcome: 'confirmed', recoveryCodes };
  });
  if (result.outcome === 'confirmed') wakeWorkers(deps);
  return result;
}

export type Removal = { outcome: 'disabled' } | { outcome: 'not-active' } | CallerFactorRefusal;

/**
 * Removes the active factor and its recovery codes. Both the password and an otp are required,
 * under the sign-in throttle, so that neither a stolen token nor a stolen password alone does it.
 * The otp is not used up: the factor it belongs to goes.
 */
export async function disableTotp(
  deps: UseCaseDeps, caller: Caller, password: string, otp: string, client: Client,
): Promise<Removal> {
  const { account, sessionId } = caller;
  const check = await checkPasswordAndFactor(deps, caller, password, otp, client);
  if (check.outcome !== 'valid') return check;
  if (check.proof === null) return { outcome: 'not-active' };
  const now = deps.clock();
  const removed = await inTransaction(deps.sql, async (tx): Promise<Removal['outcome']> => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return 'session-ended';
    if (!(await removeFactor(tx, account.id))) return 'not-active';
    await recordEvent(tx, account.id, 'totp-disabled', client.address, sessionId, now);
    await enqueueMail(tx, noticeMail('totp-disabled', account, now, client.address), deps.mailer, now);
    await deps.webhooks.enqueue(tx, 'second_factor.disabled', account.publicId, now, { method: 'totp' });
    return 'disabled';
  });
  if (removed !== 'disabled') return { outcome: removed as 'not-active' | 'session-ended' };
  wakeWorkers(deps);
  return { outcome: 'disabled' };
}

/**
 * Checks the second factor of an account whose password was just proven; never call it before,
 * as its answer tells whether the account has a factor (what sign-in reads with the account is
 * not looked at before either). `otp` must match `patterns.otp` (validation.ts). Each guess
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
