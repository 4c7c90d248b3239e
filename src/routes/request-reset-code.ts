import { reserveAddressRequest } from '../accounts/address-quotas.ts';
import { recordResetRequest } from '../accounts/reset-requests.ts';
import { readValidBody } from '../http/body.ts';
import { quotaRefused } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { resetCodeRequestSchema } from '../validation.ts';

/**
 * POST /acc/pwd/code: e-mail a reset code to the account with this address. The answer is 204
 * whether or not the address has an account, and the request writes the same rows for every
 * address: its quota, and a record that it was asked. A worker issues the code moments later
 * (reset-requests.ts, request-resolver.ts), so that nothing this request does depends on what the address holds.
 */
export const requestResetCode: Handler = async (ctx, deps) => {
  const value = await readValidBody(ctx.req, resetCodeRequestSchema);
  const now = deps.clock();
  await deps.sql.begin(async (tx) => {
    const refusal = await reserveAddressRequest(tx, 'reset', deps.keys.address(value.email), now);
    if (refusal !== null) throw quotaRefused(refusal);
    await recordResetRequest(tx, value.email, ctx.clientAddress, now);
  });
  // Not at once: the resolution must not be timed from this request (see wakeLater).
  deps.addressRequests.wakeLater();
  return { status: 204 };
};
