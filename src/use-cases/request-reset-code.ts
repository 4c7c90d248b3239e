import { reserveAddressRequest, type QuotaRefusal } from '../accounts/address-quotas.ts';
import { recordResetRequest } from '../accounts/reset-requests.ts';
import { inTransaction, type UseCaseDeps } from './transaction.ts';

export type ResetCodeRequest = { outcome: 'requested' } | { outcome: 'refused'; refusal: QuotaRefusal };

/**
 * Asks for a reset code for the account with this address. The request writes the same rows
 * for every address, whether or not it has an account: its quota (step 1 of the lock order,
 * transaction.ts), and a record that it was asked. A worker issues the code moments later
 * (accounts/reset-requests.ts, request-resolver.ts), so that nothing this request does depends
 * on what the address holds.
 */
export async function requestResetCode(
  deps: UseCaseDeps,
  email: string,
  clientAddress: string,
): Promise<ResetCodeRequest> {
  const now = deps.clock();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<ResetCodeRequest> => {
    const refusal = await reserveAddressRequest(tx, 'reset', deps.keys.address(email), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    await recordResetRequest(tx, email, clientAddress, now);
    return { outcome: 'requested' };
  });
  // Not at once: the resolution must not be timed from this request (see wakeLater).
  if (result.outcome === 'requested') deps.addressRequests.wakeLater();
  return result;
}
