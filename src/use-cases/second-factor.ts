import type { Account } from '../accounts/accounts.ts';
import { generateRecoveryCode, hashRecoveryCode, recoveryCodeCount } from '../accounts/recovery-codes.ts';
import { activateFactor, findSecondFactor, removeFactor, startEnrollment, useRecoveryCode, useTimeStep } from '../accounts/second-factor.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { base32Encode, generateSecret, matchingStep, otpauthUri, totpCodePattern } from '../accounts/totp.ts';
import { recoveryCodeUsedMail, totpDisabledMail, totpEnabledMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import type { Sealer } from '../sealing.ts';
import type { Sql } from '../storage/db.ts';
import { lockAccount } from './lock-order.ts';

/**
 * The second factor's use cases: enroll, confirm, disable, and the check that sign-in and
 * deletion make once the password is proven. Each owns its transaction and follows the lock
 * order of lock-order.ts (account row, then codes, events, outbox).
 */
export type SecondFactorDeps = { sql: Sql; sealer: Sealer; config: { tokenIssuer: string }; outbox: { wake(): void } };
type Who = Pick<Account, 'id' | 'name' | 'email'>;

/** What a presented `otp` (a TOTP code or a recovery code) proved. */
export type SecondFactorOutcome = 'none' | 'passed' | 'missing' | 'wrong';

/** A new pending secret, replacing a pending one; null when a factor is already active. */
export async function enrollTotp(deps: SecondFactorDeps, account: Who, now: Date): Promise<{ secret: string; uri: string } | null> {
  const secret = generateSecret();
  const started = await deps.sql.begin(async (tx) => (await lockAccount(tx, account.id)) && startEnrollment(tx, account.id, deps.sealer.seal(secret.toString('base64')), now));
  if (!started) return null;
  return { secret: base32Encode(secret), uri: otpauthUri(secret, deps.config.tokenIssuer, account.name) };
}

export type Confirmation = { outcome: 'confirmed'; recoveryCodes: string[] } | { outcome: 'not-pending' | 'active' | 'wrong' };

/** Activates the pending factor with its first right code: recovery codes made, event recorded, owner told. */
export async function confirmTotp(deps: SecondFactorDeps, account: Who, code: string, clientAddress: string, sessionId: string, now: Date): Promise<Confirmation> {
  const factor = await findSecondFactor(deps.sql, account.id);
  if (factor === null) return { outcome: 'not-pending' };
  if (factor.active) return { outcome: 'active' };
  const secret = openSecret(deps.sealer, factor.sealedSecret);
  const step = secret === null ? null : matchingStep(secret, code, now);
  if (step === null) return { outcome: 'wrong' };
  const recoveryCodes = Array.from({ length: recoveryCodeCount }, generateRecoveryCode);
  const activated = await deps.sql.begin(async (tx) => {
    if (!(await lockAccount(tx, account.id))) return false;
    if (!(await activateFactor(tx, account.id, factor.sealedSecret, step, recoveryCodes.map(hashRecoveryCode), now))) return false;
    await recordEvent(tx, account.id, 'totp-enabled', clientAddress, sessionId, now);
    await enqueueMail(tx, totpEnabledMail(account.email, account.name, now, clientAddress), deps.sealer, now);
    return true;
  });
  // Replaced by a new enrollment or confirmed by a concurrent request meanwhile: this code was for neither.
  return activated ? { outcome: 'confirmed', recoveryCodes } : { outcome: 'not-pending' };
}

/** Removes the active factor and its recovery codes; false when none was active. The caller proved password and otp. */
export async function disableTotp(deps: SecondFactorDeps, account: Who, clientAddress: string, sessionId: string, now: Date): Promise<boolean> {
  return deps.sql.begin(async (tx) => {
    if (!(await lockAccount(tx, account.id)) || !(await removeFactor(tx, account.id))) return false;
    await recordEvent(tx, account.id, 'totp-disabled', clientAddress, sessionId, now);
    await enqueueMail(tx, totpDisabledMail(account.email, account.name, now, clientAddress), deps.sealer, now);
    return true;
  });
}

/**
 * Checks the second factor of an account whose password was just proven; never call it before,
 * as its answer tells whether the account has a factor. `otp` must match `patterns.otp` (validation.ts).
 * A TOTP code is checked in memory (three HMACs) and its step used up in one conditional
 * statement; a recovery code is used up in a transaction that also records it and tells the owner.
 */
export async function checkSecondFactor(deps: SecondFactorDeps, account: Who, otp: string | undefined, clientAddress: string, sessionId: string | null, now: Date): Promise<SecondFactorOutcome> {
  const factor = await findSecondFactor(deps.sql, account.id);
  if (factor === null || !factor.active) return 'none';
  if (otp === undefined) return 'missing';
  if (totpCodePattern.test(otp)) {
    const secret = openSecret(deps.sealer, factor.sealedSecret);
    const step = secret === null ? null : matchingStep(secret, otp, now);
    return step !== null && (await useTimeStep(deps.sql, account.id, step)) ? 'passed' : 'wrong';
  }
  const used = await deps.sql.begin(async (tx) => {
    if (!(await lockAccount(tx, account.id))) return false;
    const left = await useRecoveryCode(tx, account.id, hashRecoveryCode(otp));
    if (left === null) return false;
    await recordEvent(tx, account.id, 'recovery-code-used', clientAddress, sessionId, now);
    await enqueueMail(tx, recoveryCodeUsedMail(account.email, account.name, now, clientAddress, left), deps.sealer, now);
    return true;
  });
  if (!used) return 'wrong';
  deps.outbox.wake();
  return 'passed';
}

/**
 * The second-factor step of a password check (checkThrottledPassword): `check` passes when the
 * account has no factor or the otp is right, and `outcome` tells afterwards what it found. It
 * stays 'none' when the password was wrong, as the factor is then never read.
 */
export function secondFactorGate(deps: SecondFactorDeps, account: Who, otp: string | undefined, clientAddress: string, sessionId: string | null, now: Date): { outcome: SecondFactorOutcome; check(): Promise<boolean> } {
  const gate = {
    outcome: 'none' as SecondFactorOutcome,
    async check() {
      gate.outcome = await checkSecondFactor(deps, account, otp, clientAddress, sessionId, now);
      return gate.outcome === 'none' || gate.outcome === 'passed';
    },
  };
  return gate;
}

/** Whether the account has an active factor (GET /acc/me). */
export async function hasActiveFactor(sql: Sql, accountId: string): Promise<boolean> {
  return (await findSecondFactor(sql, accountId))?.active ?? false;
}

/** The secret of a sealed factor; null if no configured key opens it (a TOKEN_SECRET that sealed it was removed). */
function openSecret(sealer: Sealer, sealed: Buffer): Buffer | null {
  const opened = sealer.open(sealed);
  return opened === null ? null : Buffer.from(opened, 'base64');
}
