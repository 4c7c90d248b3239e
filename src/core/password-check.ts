import { findPasswordHash, type Account } from './accounts.ts';
import { reserveAttempt, settleSuccess, type Reservation } from './login-throttle.ts';
import { recordEvent } from './security-events.ts';
import { clientNetwork } from '../http/rate-limit.ts';
import type { Client, UseCaseDeps } from './transaction.ts';

/**
 * A right `otp`, not used yet: the use case uses it up (core/factor.ts useSecondFactor) in the
 * transaction that acts on it, so that a refusal for an allowance or a lost race spends no code.
 */
export type FactorProof = { kind: 'step'; step: number } | { kind: 'recovery'; codeHash: Buffer };

type Throttled = { outcome: 'throttled'; retryAfterSeconds: number };
/** What a presented `otp` (a TOTP code or a recovery code) proved; 'none': the account has no factor. */
export type SecondFactorOutcome =
  | { outcome: 'none' | 'missing' | 'wrong' }
  | { outcome: 'passed'; proof: FactorProof }
  | Throttled;

/**
 * A password check: 'valid' with the factor's proof (null: the account has none), 'wrong' (a wrong
 * password, or a right one with a missing or wrong otp: `factor` tells which), or throttled
 * (the password's throttle, or the account's budget of factor guesses).
 */
export type PasswordCheck =
  | { outcome: 'valid'; proof: FactorProof | null }
  | { outcome: 'wrong'; factor: 'missing' | 'wrong' | null }
  | Throttled;

/**
 * The sign-in policy: checks a password under the throttle (login-throttle.ts) of `identifier`
 * as typed and the client's network (an IPv6 address by its /64, rate-limit.ts). What counts as
 * a failure: a check that was made and failed. The reservation is made inside the hashing slot
 * (PasswordHasher.verify's `whenSlotGranted`), so an overloaded service (503) charges nobody's throttle or
 * budget, and a throttled guess costs no scrypt work and learns nothing. `stored` null (no
 * account) does the same work and fails. The throttle never looks at the account, so it acts
 * alike for names that exist and not.
 *
 * `checkFactor` runs only once the password is proven, so that a wrong password answers the
 * same, with the same work, whether or not the account has a factor; a missing or wrong otp is
 * then a failure, counted like a wrong password.
 */
export async function checkPassword(
  deps: UseCaseDeps,
  identifier: string,
  clientAddress: string,
  password: string,
  stored: string | null,
  checkFactor: () => Promise<SecondFactorOutcome> = async () => ({ outcome: 'none' }),
): Promise<PasswordCheck> {
  const keys = throttleKeysOf(deps, identifier, clientAddress);
  const perHour = deps.config.loginFailuresPerHour;
  let reservation: Reservation = { wait: 0, tokenTaken: false };
  const reserve = async () => (reservation = await reserveAttempt(deps.sql, keys, perHour, deps.clock())).wait === 0;
  const valid = await deps.passwords.verify(password, stored, reserve);
  if (reservation.wait > 0) return { outcome: 'throttled', retryAfterSeconds: reservation.wait };
  if (!valid) return { outcome: 'wrong', factor: null };
  const factor = await checkFactor();
  // The reservation stays counted as a failure: no network becomes known without the factor.
  if (factor.outcome === 'throttled') return factor;
  if (factor.outcome === 'missing' || factor.outcome === 'wrong') return { outcome: 'wrong', factor: factor.outcome };
  await settleSuccess(deps.sql, keys, perHour, deps.clock(), reservation.tokenTaken);
  return { outcome: 'valid', proof: factor.outcome === 'passed' ? factor.proof : null };
}

export type CallerCheck =
  | { outcome: 'valid'; proof: FactorProof | null }
  | Exclude<CallerFactorRefusal, { outcome: 'session-ended' }>;

/**
 * How a use case of a signed-in caller refuses (routes answer with core/auth.ts callerRefusal):
 * a wrong password, a throttled one, or 'session-ended': the caller's session was ended
 * meanwhile (a concurrent password change, say), or the account deleted.
 */
export type CallerRefusal = { outcome: 'wrong-password' } | { outcome: 'session-ended' } | Throttled;
/** The same, for a use case that asks for the second factor too (core/factor.ts checkPasswordAndFactor). */
export type CallerFactorRefusal = CallerRefusal | { outcome: 'otp-required' } | { outcome: 'wrong-otp' };

/**
 * The password check of a signed-in caller (password change, deletion, e-mail change, second
 * factor), and its second factor when `checkFactor` is given: under the throttle of the account
 * itself (signedInIdentifier). A failure is recorded as the account's 'sign-in-failed' event.
 */
export async function checkCallerPassword(
  deps: UseCaseDeps,
  caller: { account: Account; sessionId: string },
  password: string,
  client: Client,
  checkFactor?: () => Promise<SecondFactorOutcome>,
): Promise<CallerCheck> {
  const { account, sessionId } = caller;
  const identifier = signedInIdentifier(account);
  // Read here, where it is checked, not with every authenticated request; null: the account is gone.
  const stored = await findPasswordHash(deps.sql, account.id);
  const check = await checkPassword(deps, identifier, client.address, password, stored, checkFactor);
  if (check.outcome !== 'wrong') return check;
  recordWrongPassword(deps, account.id, client.address, sessionId, deps.clock());
  if (check.factor === 'missing') return { outcome: 'otp-required' };
  return { outcome: check.factor === 'wrong' ? 'wrong-otp' : 'wrong-password' };
}

/**
 * An attempt at a secret that is not a password (a second-factor code at confirmation), under
 * the same throttle: reserved before `attempt` runs, and counted as a failure unless `passed`
 * says its result passed. Answers the attempt's result, or 'throttled' without running it.
 */
export async function throttledAttempt<T>(
  deps: UseCaseDeps, identifier: string, clientAddress: string,
  attempt: () => Promise<T>, passed: (result: T) => boolean,
): Promise<T | Throttled> {
  const keys = throttleKeysOf(deps, identifier, clientAddress);
  const perHour = deps.config.loginFailuresPerHour;
  const reservation = await reserveAttempt(deps.sql, keys, perHour, deps.clock());
  if (reservation.wait > 0) return { outcome: 'throttled', retryAfterSeconds: reservation.wait };
  const result = await attempt();
  if (passed(result)) await settleSuccess(deps.sql, keys, perHour, deps.clock(), reservation.tokenTaken);
  return result;
}

function throttleKeysOf(
  deps: UseCaseDeps, identifier: string, clientAddress: string,
): { identifier: Buffer; client: Buffer } {
  return { identifier: deps.keys.loginIdentifier(identifier), client: deps.keys.client(clientNetwork(clientAddress)) };
}

/**
 * The throttle identifier of a password check made with a token (old_pwd, deletion): the
 * account itself, apart from its name and address. Why: strangers spend the budget of a name
 * by guessing at sign-in, and that must not keep the signed-in owner from changing the
 * password or deleting the account; a token thief's guesses are bounded all the same.
 *
 * This and factorIdentifier hold a space, which no typed username does (features/sessions/token-route.ts takes
 * printable ASCII without spaces): with `account:<id>`, a stranger who typed it as the
 * username at sign-in spent the account's own budgets.
 */
export function signedInIdentifier(account: Pick<Account, 'publicId'>): string {
  return `account ${account.publicId}`;
}

/**
 * The key under which the networks that may ask a reset past the address's spent daily cap are known
 * (core/address-quotas.ts): those that signed in to the account or completed a reset for it. Apart
 * from the sign-in throttle's, because a reset forgets those (whoever reset it, an intruder with
 * the mailbox too) and must not forget these: the owner's home network stays one. It holds a
 * space, as signedInIdentifier does, so no typed username reaches it.
 */
export const resetIdentifier = (email: string): string => `reset ${email.toLowerCase()}`;

/**
 * The budget of the account's second-factor guesses (login-throttle.ts reserveFactorGuess),
 * wherever they are made: sign-in, disabling, deletion, e-mail change, passkey options.
 */
export function factorIdentifier(account: Pick<Account, 'publicId'>): string {
  return `factor ${account.publicId}`;
}

/** Every throttle key of an account, for a reset or a deletion to clear. */
export function throttleKeys(
  deps: Pick<UseCaseDeps, 'keys'>, account: Pick<Account, 'publicId' | 'name' | 'email'>,
): Buffer[] {
  const identifiers = [account.name, account.email, signedInIdentifier(account), factorIdentifier(account)];
  return identifiers.map((identifier) => deps.keys.loginIdentifier(identifier));
}

/**
 * Records a wrong password (at sign-in, password change or deletion) as the account's
 * 'sign-in-failed' event; with `accountId` null (a name that has none) the same statements run
 * and write nothing. The answer does not wait for it, so that nothing before the answer tells
 * the two apart: writing a row costs a fraction of a millisecond that writing nothing does not.
 * Its commit does not wait for the disk. A crash or a database error may lose the event; an error is logged.
 */
export function recordWrongPassword(
  deps: UseCaseDeps, accountId: string | null, clientAddress: string, sessionId: string | null, now: Date,
): void {
  void deps.sql.begin(async (tx) => {
    await tx`SET LOCAL synchronous_commit TO off`;
    await recordEvent(tx, accountId, 'sign-in-failed', clientAddress, sessionId, now);
  }).catch((error: unknown) => deps.log.warn('a failed sign-in was not recorded', { error: String(error) }));
}
