import { reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { recordRegistrationRequest } from './requests.ts';
import { claimName } from './store.ts';
import { inTransaction, type UseCaseDeps } from '../../core/transaction.ts';

export type RegistrationCodeRequest =
  | { outcome: 'requested' }
  | { outcome: 'name-taken' }
  | { outcome: 'refused'; refusal: QuotaRefusal };

export type RegistrationFields = {
  name: string; email: string; phone: string | null; pwd: string; locale: string | null;
};

/**
 * Stores a pending registration, whose code a worker e-mails moments later.
 *
 * Whatever the address holds (nothing, a pending registration, an account), the same checks
 * run in the same order with the same outcome: the name taken (the name is held for this
 * address on every path), then the address's quota, then requested. The request then only
 * records that it was asked, the same row for every address; the worker resolves it
 * (features/registration/requests.ts). Only the mailbox learns which case it was.
 *
 * Lock order (transaction.ts): the name hold, then the address quota (step 1). A refusal rolls
 * back what the request wrote, the name hold too.
 */
export async function requestRegistrationCode(
  deps: UseCaseDeps,
  fields: RegistrationFields,
): Promise<RegistrationCodeRequest> {
  const { name, email, phone, pwd, locale } = fields;
  // Hashed on every path, before the address is looked up, so that every state of the address
  // costs the same work (account-enumeration safety), though only a new registration keeps it.
  // In the bulk lane: a flood of registrations must not starve sign-ins of hashing slots.
  const passwordHash = await deps.passwords.hash(pwd, 'bulk');
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + deps.config.regCodeTtlSeconds * 1000);
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<RegistrationCodeRequest> => {
    const claimed = await claimName(tx, name, email, deps.keys.address(email), expiresAt, now);
    if (!claimed) return rollBack({ outcome: 'name-taken' });
    const refusal = await reserveAddressRequest(tx, 'registration', deps.keys.address(email), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    await recordRegistrationRequest(tx, { name, email, phone, passwordHash, expiresAt, locale }, now);
    return { outcome: 'requested' };
  });
  // Not at once: the resolution must not be timed from this request (see wakeLater).
  if (result.outcome === 'requested') deps.addressRequests.wakeLater();
  return result;
}
