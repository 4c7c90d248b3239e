import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { useSecondFactor } from '../../core/factor.ts';
import type { CallerFactorRefusal } from '../../core/password-check.ts';
import { requireProof } from '../../core/proofs.ts';
import { recordEvent } from '../../core/security-events.ts';
import { inTransaction, lockAccountIfSessionLives, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { noticeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import { readExport } from './document.ts';

export type Export =
  | { outcome: 'exported'; document: Record<string, unknown> } | { outcome: 'refused'; refusal: QuotaRefusal }
  | CallerFactorRefusal;

/**
 * Everything kept about the caller's account, as one document (GDPR articles 15 and 20), with
 * the password and the factor (core/proofs.ts 'export-account'): a stolen token alone reads no
 * more than GET /acc/me does. The export is recorded as an event and the owner is told, so that
 * a password thief's copy does not go unseen; once a minute and ten a day at most (the account's
 * quota), which bounds the mail it causes and the reads it costs.
 */
export async function exportAccount(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string },
  evidence: { password: string; otp: string | undefined }, client: Client,
): Promise<Export> {
  const { account, sessionId } = caller;
  const check = await requireProof(deps, caller, 'export-account', evidence, client);
  if (check.outcome !== 'valid') return check;
  const now = deps.clock();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<Export> => {
    const refusal = await reserveAddressRequest(tx, 'export', accountQuotaKey(deps.keys, account.publicId), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    if (!(await lockAccountIfSessionLives(tx, caller))) return rollBack({ outcome: 'session-ended' });
    if (!(await useSecondFactor(tx, deps, account, check.proof, client.address, sessionId, now))) {
      return rollBack({ outcome: 'wrong-otp' });
    }
    await recordEvent(tx, account.id, 'account-exported', client.address, sessionId, now);
    await enqueueMail(tx, noticeMail('data-exported', account, now, client.address), deps.mailer, now);
    return { outcome: 'exported', document: await readExport(tx, account.id, now) };
  });
  if (result.outcome === 'exported') deps.outbox.wake();
  return result;
}
