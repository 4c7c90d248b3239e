import { generateRegistrationCode, hashRegistrationCode } from '../codes.ts';
import { isUniqueViolation } from '../db.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { registrationAttemptMail, registrationCodeMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { insertRegistration, lockAddressHolder, recordAttemptNotice, releaseExpiredHolders, replaceRegistration } from '../registrations.ts';
import { registrationSchema, validateFields } from '../validation.ts';

/** How long an address must wait before it may ask for another code. */
export const resendCooldownSeconds = 60;
/** At most one "someone tried to register" notice per account in this time, so nobody can flood its mailbox. */
export const attemptNoticeIntervalMs = 60 * 60 * 1000;

/** POST /acc/reg/code: store a pending registration and e-mail its code. */
export const requestRegistrationCode: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), registrationSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const { name, email, phone, pwd } = value;

  // Hashed on every path, before the address is looked up, so that a known and an unknown
  // address cost the same work (account-enumeration safety).
  const passwordHash = await deps.passwords.hash(pwd);
  const code = generateRegistrationCode();
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + deps.config.regCodeTtlSeconds * 1000);
  const request = { name, email, phone, passwordHash, codeHash: hashRegistrationCode(code), sentAt: now, expiresAt };

  let waitSeconds = 0;
  try {
    waitSeconds = await deps.sql.begin(async (tx) => {
      await releaseExpiredHolders(tx, name, email, now);
      const holder = await lockAddressHolder(tx, email);
      if (holder?.active === true) {
        // The caller sees 204 as for a new address; only the owner learns of the attempt.
        const notifiedAt = holder.attemptNotifiedAt?.getTime() ?? -Infinity;
        if (now.getTime() - notifiedAt >= attemptNoticeIntervalMs) {
          await recordAttemptNotice(tx, holder.id, now);
          await enqueueMail(tx, registrationAttemptMail(email), deps.sealer, now);
        }
        return 0;
      }
      if (holder !== null) {
        const wait = Math.ceil(resendCooldownSeconds - (now.getTime() - holder.codeSentAt.getTime()) / 1000);
        if (wait > 0) return wait;
        await replaceRegistration(tx, holder.id, request);
      } else {
        await insertRegistration(tx, request);
      }
      await enqueueMail(tx, registrationCodeMail(email, name, code, expiresAt, deps.config.regCodeTtlSeconds), deps.sealer, now);
      return 0;
    });
  } catch (error) {
    if (isUniqueViolation(error, 'accounts_name_key')) throw new HttpError(problems.nameTaken);
    // A concurrent request for the same new address won the race and is sending its code.
    if (isUniqueViolation(error, 'accounts_email_key')) waitSeconds = resendCooldownSeconds;
    else throw error;
  }
  if (waitSeconds > 0) throw new HttpError(problems.tooSoon, { headers: { 'Retry-After': String(waitSeconds) } });
  deps.outbox.wake();
  return { status: 204 };
};
