import {
  knownNetworkQuotaKey, reserveAddressRequest, type QuotaRefusal,
} from '../../core/address-quotas.ts';
import { isKnownClient } from '../../core/login-throttle.ts';
import { recordResetRequest } from './reset-requests.ts';
import { clientNetwork } from '../../http/rate-limit.ts';
import { inTransaction, type UseCaseDeps } from '../../core/transaction.ts';
import { resetIdentifier } from '../../core/password-check.ts';

export type ResetCodeRequest = { outcome: 'requested' } | { outcome: 'refused'; refusal: QuotaRefusal };

/** Reset requests a day from one network known to the address, past the address's own quota. */
export const knownNetworkDailyCap = 3;

/**
 * Asks for a reset code for the account with this address. The request writes the same rows
 * for every address, whether or not it has an account: its quota (step 1 of the lock order,
 * transaction.ts), and a record that it was asked. A worker issues the code moments later
 * (features/password/reset-requests.ts, request-resolver.ts), so that nothing this request does depends
 * on what the address holds.
 *
 * When the address's daily cap refuses, a network that proved the password of this address, or
 * completed a reset for it, in the last 30 days (the sign-in throttle's known networks) is
 * counted in a quota of its own (`knownNetworkDailyCap` a day per network): a stranger who
 * spends the address's quota does not keep the owner from resetting, and the mail a stranger
 * can cause stays bounded by the address's quota. The lookup is one keyed-hash probe that finds
 * nothing for any network but the owner's, whether or not the address has an account.
 */
export async function requestResetCode(
  deps: UseCaseDeps,
  email: string,
  clientAddress: string,
): Promise<ResetCodeRequest> {
  const now = deps.clock();
  const network = clientNetwork(clientAddress);
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<ResetCodeRequest> => {
    const refusal = await reserveAddressRequest(tx, 'reset', deps.keys.address(email), now);
    // Only past the daily cap: within the minute's cooldown every network is answered alike, so
    // that no request tells a network that signed in from one that did not (the owner waits a minute).
    if (refusal?.reason === 'cooldown') return rollBack({ outcome: 'refused', refusal });
    if (refusal !== null) {
      const keys = { identifier: deps.keys.loginIdentifier(resetIdentifier(email)), client: deps.keys.client(network) };
      if (!(await isKnownClient(tx, keys, now))) return rollBack({ outcome: 'refused', refusal });
      const quotaKey = knownNetworkQuotaKey(deps.keys, email, network);
      const own = await reserveAddressRequest(tx, 'reset-known', quotaKey, now, knownNetworkDailyCap);
      if (own !== null) return rollBack({ outcome: 'refused', refusal: own });
    }
    await recordResetRequest(tx, email, clientAddress, now);
    return { outcome: 'requested' };
  });
  // Not at once: the resolution must not be timed from this request (see wakeLater).
  if (result.outcome === 'requested') deps.addressRequests.wakeLater();
  return result;
}
