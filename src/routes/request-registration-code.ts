import { reserveAddressRequest } from '../accounts/address-quotas.ts';
import { recordRegistrationRequest } from '../accounts/registration-requests.ts';
import { claimName } from '../accounts/registrations.ts';
import { readValidBody } from '../http/body.ts';
import { HttpError, problems, quotaRefused } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { registrationSchema } from '../validation.ts';

/**
 * POST /acc/reg/code: store a pending registration and e-mail its code.
 *
 * Whatever the address holds (nothing, a pending registration, an account), the same checks
 * run in the same order and the caller gets the same answer: 400, then 409 for a taken name
 * (and the name is held for this address on every path), then 429 from the address's quota,
 * then 204. The request then only records that it was asked, the same row for every address;
 * a worker resolves it moments later (registration-requests.ts). Only the mailbox learns
 * which case it was.
 */
export const requestRegistrationCode: Handler = async (ctx, deps) => {
  const { name, email, phone, pwd } = await readValidBody(ctx.req, registrationSchema);

  // Hashed on every path, before the address is looked up, so that every state of the address
  // costs the same work (account-enumeration safety), though only a new registration keeps it.
  // In the bulk lane: a flood of registrations must not starve sign-ins of hashing slots.
  const passwordHash = await deps.passwords.hash(pwd, 'bulk');
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + deps.config.regCodeTtlSeconds * 1000);
  await deps.sql.begin(async (tx) => {
    if (!(await claimName(tx, name, email, expiresAt, now))) throw new HttpError(problems.nameTaken);
    const refusal = await reserveAddressRequest(tx, 'registration', deps.keys.address(email), now);
    if (refusal !== null) throw quotaRefused(refusal);
    await recordRegistrationRequest(tx, { name, email, phone, passwordHash, expiresAt }, now);
  });
  // Not at once: the resolution must not be timed from this request (see wakeLater).
  deps.addressRequests.wakeLater();
  return { status: 204 };
};
