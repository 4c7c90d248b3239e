import { randomBytes } from 'node:crypto';
import { findAccountRef, type AccountRef } from './views.ts';
import { clearFailures } from '../../core/login-throttle.ts';
import { generateCode, hashCode } from '../../core/one-time-codes.ts';
import { issueResetCode, resetPasswordHash } from '../../core/reset-codes.ts';
import { removeFactor } from '../../core/factor-store.ts';
import { recordOperatorEvent } from '../../core/security-events.ts';
import { resetForcedMail } from '../../mail/messages.ts';
import { sealMail } from '../../mail/outbox.ts';
import type { Transaction } from '../../storage/db.ts';
import type { WebhookData } from '../../webhooks/events.ts';
import { eraseAccount, removeWaysIn } from '../../core/erasure.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { throttleKeys } from '../../core/password-check.ts';
import { inTransaction, lockAccount, wakeWorkers, type UseCaseDeps } from '../../core/transaction.ts';

/** Who acts: an operator, from `address` (the admin listener's client, or the command), for `reason`. */
export type Operator = { address: string; reason: string | null };
/** Every operator action on an account: done, or the account is unknown (or went meanwhile). */
export type OperatorOutcome<T = {}> = ({ outcome: 'done' } & T) | { outcome: 'not-found' };

/** What every operator event and webhook says: an operator acted, and why. */
export const operatorData = (operator: Operator): WebhookData =>
  ({ actor: 'operator', operator_reason: operator.reason });

/**
 * One operator action on the account `identifier` names, in one transaction that first locks
 * the account row (step 2 of the lock order, core/transaction.ts), so that the action
 * commits whole or not at all, and queues behind any use case of the account's owner.
 */
export async function onAccount<T>(
  deps: UseCaseDeps, identifier: string, work: (tx: Transaction, account: AccountRef, now: Date) => Promise<T>,
): Promise<OperatorOutcome<T>> {
  const account = await findAccountRef(deps.sql, identifier);
  if (account === null) return { outcome: 'not-found' };
  const now = deps.clock();
  const result = await inTransaction(deps.sql, async (tx) =>
    (await lockAccount(tx, account.id)) ? { outcome: 'done' as const, ...(await work(tx, account, now)) } : null);
  if (result === null) return { outcome: 'not-found' };
  wakeWorkers(deps);
  return result;
}

/** Ends every session of the account (THE way, end-sessions.ts), with the operator's event and webhook. */
export function endSessionsAsOperator(
  deps: UseCaseDeps, identifier: string, operator: Operator,
): Promise<OperatorOutcome<{ ended: number }>> {
  return onAccount(deps, identifier, async (tx, account, now) => {
    const data = { reason: 'operator', ...operatorData(operator) };
    const webhook = deps.webhooks.event('sessions.revoked', account.publicId, now, data);
    const event = { type: 'sessions-ended' as const, clientAddress: operator.address, sessionId: null, operator };
    const accountId = account.id;
    const ended = await endSessions(tx, { accountId, sessionId: null, event, webhook, record: 'always', now });
    return { ended: ended.length };
  });
}

/**
 * A forced reset, for an account taken over: the password is replaced by a random one that
 * nobody knows (so that whoever knew the old one cannot sign in again), every session ends,
 * every passkey and identity at a provider goes (each signs in on its own, and an intruder with
 * the password and the mailbox may have added one), and a reset code goes to the account's address. Whoever reads
 * that mailbox sets the next password, through the usual reset (POST /acc/pwd); not while the
 * account is disabled (`code_mailed` false: enable it, then the owner asks for a code). The
 * owner's own reset keeps passkeys; this one is for when the owner's credentials are in doubt.
 */
export async function forceReset(
  deps: UseCaseDeps, identifier: string, operator: Operator,
): Promise<OperatorOutcome<{ passkeys_removed: number; identities_removed: number; code_mailed: boolean }>> {
  const unknowable = await deps.passwords.hash(randomBytes(32).toString('base64url'));
  return onAccount(deps, identifier, async (tx, account, now) => {
    await resetPasswordHash(tx, account.id, unknowable);
    const webhook = deps.webhooks.event('password.reset_forced', account.publicId, now, operatorData(operator));
    const event = { type: 'reset-forced' as const, clientAddress: operator.address, sessionId: null, operator };
    await endSessions(tx, { accountId: account.id, sessionId: null, event, webhook, record: 'always', now });
    const record = (type: 'passkey-removed' | 'identity-removed') =>
      recordOperatorEvent(tx, account.id, type, operator, now);
    const removed = await removeWaysIn(tx, deps, account, now, record, operatorData(operator));
    const code = generateCode();
    const expiresAt = new Date(now.getTime() + deps.config.resetCodeTtlSeconds * 1000);
    const mail = sealMail(resetForcedMail(code, expiresAt, now, account.locale), deps.mailer);
    const { address } = operator;
    const mailed = await issueResetCode(tx, account.email, hashCode(code), expiresAt, mail, address, now, false);
    return { passkeys_removed: removed.passkeys, identities_removed: removed.identities, code_mailed: mailed };
  });
}

/**
 * Clears the sign-in throttle's failures of `identifier` as typed and, when it names an account,
 * of the account's name, address and own key, with the operator's event. Networks known to the
 * account stay known. An identifier that names no account (a name strangers guessed at) is
 * cleared all the same, with no event: there is no account to hold one.
 */
export async function unlock(
  deps: UseCaseDeps, identifier: string, operator: Operator,
): Promise<{ outcome: 'done'; matched_account: boolean }> {
  const typed = deps.keys.loginIdentifier(identifier);
  const done = await onAccount(deps, identifier, async (tx, account, now) => {
    await clearFailures(tx, [typed, ...throttleKeys(deps, account)]);
    await recordOperatorEvent(tx, account.id, 'throttle-cleared', operator, now);
    await deps.webhooks.enqueue(tx, 'account.unlocked', account.publicId, now, operatorData(operator));
    return {};
  });
  if (done.outcome === 'done') return { outcome: 'done', matched_account: true };
  await inTransaction(deps.sql, (tx) => clearFailures(tx, [typed]));
  return { outcome: 'done', matched_account: false };
}

/** Removes the account's second factor and its recovery codes, for an owner who lost both. */
export function removeSecondFactor(
  deps: UseCaseDeps, identifier: string, operator: Operator,
): Promise<OperatorOutcome<{ removed: boolean }>> {
  return onAccount(deps, identifier, async (tx, account, now) => {
    const removed = await removeFactor(tx, account.id);
    if (!removed) return { removed };
    await recordOperatorEvent(tx, account.id, 'totp-disabled', operator, now);
    const data = { method: 'totp', ...operatorData(operator) };
    await deps.webhooks.enqueue(tx, 'second_factor.disabled', account.publicId, now, data);
    return { removed };
  });
}

/** Deletes the account by the owner's path (core/erasure.ts eraseAccount): the same rows go, the same notice too. */
export async function deleteAsOperator(
  deps: UseCaseDeps, identifier: string, operator: Operator,
): Promise<OperatorOutcome> {
  const account = await findAccountRef(deps.sql, identifier);
  if (account === null) return { outcome: 'not-found' };
  const lock = async (tx: Transaction) => ((await lockAccount(tx, account.id)) ? 'go-on' : 'gone');
  const erased = await eraseAccount(deps, account, null, lock, operatorData(operator));
  return erased === 'go-on' ? { outcome: 'done' } : { outcome: 'not-found' };
}
