import type { Account } from '../../core/accounts.ts';
import { noticeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import { endSessions } from '../../core/end-sessions.ts';
import type { CallerFactorRefusal } from '../../core/password-check.ts';
import { inTransaction, lockAccount, wakeWorkers, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { requireProof } from '../../core/proofs.ts';

export type PasswordChange = { outcome: 'changed' } | CallerFactorRefusal;

/**
 * Changes the password of the signed-in account and ends every session (the caller's too),
 * then notifies the owner. The old password is checked under the throttle of the account
 * itself, so that a stolen token is no way around the sign-in throttle.
 */
export async function changePassword(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string }, oldPassword: string, newPassword: string,
  client: Client,
): Promise<PasswordChange> {
  const { account, sessionId } = caller;
  const check = await requireProof(deps, caller, 'change-password', { password: oldPassword }, client);
  if (check.outcome !== 'valid') return check;
  const newHash = await deps.passwords.hash(newPassword);
  const now = deps.clock();
  const changed = await inTransaction(deps.sql, async (tx) => {
    if (!(await lockAccount(tx, account.id))) return false;
    // After the lock, so that a change, reset or sign-out that ended the caller's session
    // before is seen: of two racing changes, the second finds its session gone and loses.
    const updated = await tx`
      UPDATE accounts SET password_hash = ${newHash}
      WHERE id = ${account.id}
        AND EXISTS (SELECT 1 FROM sessions WHERE id = ${sessionId} AND account_id = ${account.id})`;
    if (updated.count === 0) return false;
    const webhook = deps.webhooks.event('password.changed', account.publicId, now);
    const event = { type: 'password-changed', clientAddress: client.address, sessionId } as const;
    await endSessions(tx, { accountId: account.id, sessionId: null, event, webhook, record: 'always', now });
    await enqueueMail(tx, noticeMail('password-changed', account, now, client.address), deps.mailer, now);
    return true;
  });
  if (!changed) return { outcome: 'session-ended' };
  wakeWorkers(deps);
  return { outcome: 'changed' };
}
