import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { findSecondFactor, removeFactor } from '../../core/factor-store.ts';
import { forgetKnownClients } from '../../core/login-throttle.ts';
import { generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import {
  signedInIdentifier, throttledAttempt, throttleKeys, type CallerFactorRefusal, type CallerRefusal,
} from '../../core/password-check.ts';
import { hashRecoveryCode } from '../../core/recovery-codes.ts';
import { recordEvent } from '../../core/security-events.ts';
import { matchingStep } from '../../core/totp.ts';
import {
  activateFactor, base32Encode, generateRecoveryCode, generateSecret, otpauthUri, recoveryCodeCount, startEnrollment,
} from './enrollment.ts';
import {
  inTransaction, lockAccountIfSessionLives, wakeWorkers, type Client, type UseCaseDeps,
} from '../../core/transaction.ts';
import { actCodeMail, noticeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import { requireProof, useMailbox } from '../../core/proofs.ts';

/**
 * The second factor (TOTP, RFC 6238): enroll, confirm, disable; the check that every use case
 * makes once the password is proven is the core's (core/factor.ts). Each owns its transaction
 * and follows the lock order of core/transaction.ts: the request quota, the account row,
 * sessions, then codes (the factor, its recovery codes, the e-mailed code), events, outbox.
 *
 * The mailbox is the root of recovery: a factor survives a password reset, so enrolling one
 * needs the password and a code mailed to the account's address, as adding a passkey does. A
 * password thief can no longer tie the account to an app of their own and keep it past a reset.
 */
type Caller = { account: Account; sessionId: string };

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
  const check = await requireProof(deps, caller, 'enable-second-factor', { password }, client);
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
    await enqueueMail(tx, actCodeMail('totp-code', account, code, expiresAt, now, client.address), deps.mailer, now);
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
    const mailed = await useMailbox(tx, 'enable-second-factor', account.id, emailCode, now);
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
  const check = await requireProof(deps, caller, 'disable-second-factor', { password, otp }, client);
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

