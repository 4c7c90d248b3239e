import type { Account } from '../../core/accounts.ts';
import type { CallerRefusal } from '../../core/password-check.ts';
import { requireProof } from '../../core/proofs.ts';
import { recordEvent } from '../../core/security-events.ts';
import { inTransaction, lockAccountIfSessionLives, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { noticeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';

/**
 * Turns the account's sign-in notices on or off, with the password (core/proofs.ts
 * 'set-notices'); a change is recorded as an event, and turning them off is mailed to the owner,
 * so that a password thief cannot silence them unseen. A reset turns them on again
 * (core/reset-codes.ts), and a sign-in by mailed code is announced whatever this says.
 */
export async function setSignInNotices(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string }, on: boolean, password: string, client: Client,
): Promise<{ outcome: 'set' } | CallerRefusal> {
  const check = await requireProof(deps, caller, 'set-notices', { password }, client);
  if (check.outcome !== 'valid') return check as CallerRefusal;
  const { account, sessionId } = caller;
  return inTransaction(deps.sql, async (tx) => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'session-ended' } as const;
    const changed = await tx`
      UPDATE accounts SET sign_in_notices = ${on} WHERE id = ${account.id} AND sign_in_notices <> ${on}`;
    if (changed.count === 1) {
      const now = deps.clock();
      await recordEvent(tx, account.id, on ? 'notices-on' : 'notices-off', client.address, sessionId, now);
      // Told to the owner, last of all: a password thief's first step to sign in unseen.
      if (!on) await enqueueMail(tx, noticeMail('notices-off', account, now, client.address), deps.mailer, now);
    }
    return { outcome: 'set' } as const;
  }).then((result) => {
    if (!on) deps.outbox.wake();
    return result;
  });
}
