import type { Account } from '../accounts/accounts.ts';
import { generateRecoveryCode, hashRecoveryCode, recoveryCodeCount } from '../accounts/recovery-codes.ts';
import { activateFactor, findSecondFactor, removeFactor, resealFactor, startEnrollment, useRecoveryCode, useTimeStep } from '../accounts/second-factor.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { base32Encode, generateSecret, matchingStep, otpauthUri, totpCodePattern } from '../accounts/totp.ts';
import { noticeMail, recoveryCodeUsedMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import type { Sql } from '../storage/db.ts';
import { checkCallerPassword, signedInIdentifier, throttledAttempt, type CallerCheck, type CallerFactorRefusal, type CallerRefusal, type SecondFactorOutcome } from './password-check.ts';
import { inTransaction, lockAccount, lockAccountIfSessionLives, wakeWorkers, type Client, type UseCaseDeps } from './transaction.ts';

/**
 * The second factor (TOTP, RFC 6238): enroll, confirm, disable, and the check that sign-in and
 * deletion make once the password is proven. Each owns its transaction and follows the lock
 * order of transaction.ts: the account row, then codes (the factor and its recovery codes),
 * events, outbox. Using a TOTP step is one statement on the factor row alone.
 */
type Caller = { account: Account; sessionId: string };
type FactorAccount = Pick<Account, 'id' | 'name' | 'email' | 'locale' | 'activeFactorSecret'>;

export type Enrollment = { outcome: 'enrolled'; secret: string; uri: string } | { outcome: 'active' } | CallerFactorRefusal;

/**
 * Starts a pending enrollment, replacing a pending one. The password is required (throttled like
 * a sign-in), so that a stolen token alone cannot tie the account to a thief's app.
 */
export async function enrollTotp(deps: UseCaseDeps, caller: Caller, password: string, client: Client): Promise<Enrollment> {
  const { account } = caller;
  const check = await checkCallerPassword(deps, caller, password, client);
  if (check.outcome !== 'valid') return check;
  const secret = generateSecret();
  const sealed = deps.sealer.seal(secret, 'totp-secret', account.id);
  const now = deps.clock();
  const started = await inTransaction(deps.sql, async (tx) => ((await lockAccountIfSessionLives(tx, caller)) ? startEnrollment(tx, account.id, sealed, now) : null));
  if (started === null) return { outcome: 'session-ended' };
  if (!started) return { outcome: 'active' };
  return { outcome: 'enrolled', secret: base32Encode(secret), uri: otpauthUri(secret, deps.config.totpIssuer, account.name) };
}

export type Confirmation = { outcome: 'confirmed'; recoveryCodes: string[] } | { outcome: 'not-pending' | 'active' | 'wrong' } | Exclude<CallerRefusal, { outcome: 'wrong-password' }>;

/**
 * Activates the pending factor with its first right code: recovery codes made, event recorded,
 * owner told. Wrong codes count in the throttle of the signed-in account, so that a stolen
 * token cannot guess its way through a pending enrollment to the recovery codes.
 */
export async function confirmTotp(deps: UseCaseDeps, caller: Caller, code: string, client: Client): Promise<Confirmation> {
  const attempt = () => activateWithCode(deps, caller, code, client);
  return throttledAttempt(deps, signedInIdentifier(caller.account), client.address, attempt, (result) => result.outcome !== 'wrong');
}

async function activateWithCode(deps: UseCaseDeps, { account, sessionId }: Caller, code: string, client: Client): Promise<Confirmation> {
  const factor = await findSecondFactor(deps.sql, account.id);
  if (factor === null) return { outcome: 'not-pending' };
  if (factor.active) return { outcome: 'active' };
  const now = deps.clock();
  const secret = deps.sealer.open(factor.sealedSecret, 'totp-secret', account.id)?.plaintext;
  const step = secret === undefined ? null : matchingStep(secret, code, now);
  if (step === null) return { outcome: 'wrong' };
  const recoveryCodes = Array.from({ length: recoveryCodeCount }, generateRecoveryCode);
  const activated = await inTransaction(deps.sql, async (tx): Promise<Confirmation['outcome']> => {
    if (!(await lockAccountIfSessionLives(tx, { account, sessionId }))) return 'session-ended';
    if (!(await activateFactor(tx, account.id, factor.sealedSecret, step, recoveryCodes.map(hashRecoveryCode), now))) return 'not-pending';
    await recordEvent(tx, account.id, 'totp-enabled', client.address, sessionId, now);
    await enqueueMail(tx, noticeMail('totp-enabled', account, now, client.address), deps.mailer, now);
    await deps.webhooks.enqueue(tx, 'second_factor.enabled', account.publicId, now, { method: 'totp' });
    return 'confirmed';
  });
  // Not pending: replaced by a new enrollment or confirmed by a concurrent request meanwhile.
  if (activated !== 'confirmed') return { outcome: activated as 'not-pending' | 'session-ended' };
  wakeWorkers(deps);
  return { outcome: 'confirmed', recoveryCodes };
}

export type Removal = { outcome: 'disabled' } | { outcome: 'not-active' } | CallerFactorRefusal;

/**
 * Removes the active factor and its recovery codes. Both the password and an otp are required,
 * under the sign-in throttle, so that neither a stolen token nor a stolen password alone does it.
 */
export async function disableTotp(deps: UseCaseDeps, caller: Caller, password: string, otp: string, client: Client): Promise<Removal> {
  const { account, sessionId } = caller;
  const check = await checkPasswordAndFactor(deps, caller, password, otp, client);
  if (check.outcome !== 'valid') return check;
  if (check.factor === 'none') return { outcome: 'not-active' };
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
 * not looked at before either). `otp` must match `patterns.otp`
 * (validation.ts). A TOTP code is checked in memory (three HMACs) and its step used up in one
 * conditional statement; a recovery code is used up in a transaction that also records it and
 * tells the owner.
 */
export async function checkSecondFactor(deps: UseCaseDeps, account: FactorAccount, otp: string | undefined, clientAddress: string, sessionId: string | null, now: Date): Promise<SecondFactorOutcome> {
  // Sign-in read the secret with the account (one round trip fewer); it is looked at only here.
  const known = account.activeFactorSecret;
  const factor = known === undefined ? await findSecondFactor(deps.sql, account.id) : known === null ? null : { sealedSecret: known, active: true };
  if (factor === null || !factor.active) return 'none';
  if (otp === undefined) return 'missing';
  if (totpCodePattern.test(otp)) {
    const secret = await openActiveSecret(deps, account.id, factor.sealedSecret);
    const step = secret === null ? null : matchingStep(secret, otp, now);
    return step !== null && (await useTimeStep(deps.sql, account.id, step)) ? 'passed' : 'wrong';
  }
  const used = await inTransaction(deps.sql, async (tx) => {
    if (!(await lockAccount(tx, account.id))) return false;
    const left = await useRecoveryCode(tx, account.id, hashRecoveryCode(otp));
    if (left === null) return false;
    await recordEvent(tx, account.id, 'recovery-code-used', clientAddress, sessionId, now);
    await enqueueMail(tx, recoveryCodeUsedMail(account, now, clientAddress, left), deps.mailer, now);
    return true;
  });
  if (!used) return 'wrong';
  deps.outbox.wake();
  return 'passed';
}

/**
 * The password check of a signed-in caller (checkCallerPassword), then, once the password is
 * proven and under the same throttle, the second factor: an active factor needs a right `otp`.
 * A valid check's `factor` tells what the second factor found ('none': the account has none).
 */
export function checkPasswordAndFactor(deps: UseCaseDeps, caller: Caller, password: string, otp: string | undefined, client: Client): Promise<CallerCheck> {
  const checkFactor = () => checkSecondFactor(deps, caller.account, otp, client.address, caller.sessionId, deps.clock());
  return checkCallerPassword(deps, caller, password, client, checkFactor);
}

/** Whether the account has an active factor (GET /acc/me). */
export async function hasActiveFactor(sql: Sql, account: FactorAccount): Promise<boolean> {
  if (account.activeFactorSecret !== undefined) return account.activeFactorSecret !== null;
  return (await findSecondFactor(sql, account.id))?.active ?? false;
}

/**
 * The secret of an active factor; null if no configured key opens it (its encryption key was
 * removed before the re-seal). One sealed under an old key is sealed again under the current one.
 */
async function openActiveSecret(deps: UseCaseDeps, accountId: string, sealed: Buffer): Promise<Buffer | null> {
  const opened = deps.sealer.open(sealed, 'totp-secret', accountId);
  if (opened === null) return null;
  if (!opened.current) await resealFactor(deps.sql, accountId, sealed, deps.sealer.seal(opened.plaintext, 'totp-secret', accountId));
  return opened.plaintext;
}
