import { reserveAddressRequest } from '../accounts/address-quotas.ts';
import { isUniqueViolation } from '../storage/db.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, quotaRefused } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { registrationAttemptMail, registrationCodeMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { generateCode, hashCode, storeCode } from '../accounts/one-time-codes.ts';
import { attemptNoticeIntervalMs, claimName, insertRegistration, lockAddressHolder, recordAttemptNotice, releaseExpiredHolders } from '../accounts/registrations.ts';
import { registrationSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/reg/code: store a pending registration and e-mail its code.
 *
 * Whatever the address holds (nothing, a pending registration, an account), the same checks
 * run in the same order and the caller gets the same answer: 400, then 409 for a taken name
 * (and the name is held for this address on every path), then 429 from the address's quota,
 * then 204. Only the mailbox learns which case it was.
 */
export const requestRegistrationCode: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), registrationSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const { name, email, phone, pwd } = value;

  // Hashed on every path, before the address is looked up, so that every state of the address
  // costs the same work (account-enumeration safety), though only a new registration keeps it.
  // In the bulk lane: a flood of registrations must not starve sign-ins of hashing slots.
  const passwordHash = await deps.passwords.hash(pwd, 'bulk');
  const code = generateCode();
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + deps.config.regCodeTtlSeconds * 1000);
  try {
    await deps.sql.begin(async (tx) => {
      await releaseExpiredHolders(tx, name, email, now);
      if (!(await claimName(tx, name, email, expiresAt, now))) throw new HttpError(problems.nameTaken);
      const refusal = await reserveAddressRequest(tx, 'registration', deps.keys.address(email), now);
      if (refusal !== null) throw quotaRefused(refusal);

      const holder = await lockAddressHolder(tx, email);
      if (holder === null) {
        const id = await insertRegistration(tx, { name, email, phone, passwordHash, expiresAt });
        await storeCode(tx, 'registration', id, hashCode(code), expiresAt, now);
        await enqueueMail(tx, registrationCodeMail(email, name, code, expiresAt, now), deps.sealer, now);
      } else if (!holder.active) {
        // A repeat never changes the pending registration: its name, password, phone and expiry
        // stay those of the first request, so that nobody who knows the address can change what
        // the owner's code activates. Only a new code is sent, and older ones stop working.
        await storeCode(tx, 'registration', holder.id, hashCode(code), holder.expiresAt, now);
        await enqueueMail(tx, registrationCodeMail(holder.email, holder.name, code, holder.expiresAt, now, true), deps.sealer, now);
      } else if (now.getTime() - (holder.attemptNotifiedAt?.getTime() ?? -Infinity) >= attemptNoticeIntervalMs) {
        // Nothing is stored; the owner is told, at the address stored for the account.
        await recordAttemptNotice(tx, holder.id, now);
        await enqueueMail(tx, registrationAttemptMail(holder.email, holder.name), deps.sealer, now);
      }
    });
  } catch (error) {
    // A concurrent request took the name between the check and the insert.
    if (isUniqueViolation(error, 'accounts_name_key')) throw new HttpError(problems.nameTaken);
    throw error;
  }
  // Not at once: see wakeLater, the sending must not be timed from this request.
  deps.outbox.wakeLater();
  return { status: 204 };
};
