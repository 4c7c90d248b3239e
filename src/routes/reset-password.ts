import { readJsonObject } from '../http/body.ts';
import { checkCode } from '../http/codes.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { clearThrottle } from '../accounts/login-throttle.ts';
import { throttleIdentifiers } from '../http/auth.ts';
import { passwordResetMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { consumeCode, deleteCodes } from '../accounts/one-time-codes.ts';
import { resetPasswordHash } from '../accounts/password-resets.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { revokeAllSessions } from '../sessions/sessions.ts';
import { passwordResetSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/pwd: set a new password with a reset code. The body is checked before the code is
 * touched, so a refused password never uses the code up. No token is returned: the user signs
 * in as usual.
 */
export const resetPassword: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), passwordResetSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const codeHash = await checkCode(deps, 'reset', value.code);
  const passwordHash = await deps.passwords.hash(value.new_pwd);
  const now = deps.clock();
  const reset = await deps.sql.begin(async (tx) => {
    const accountId = await consumeCode(tx, 'reset', codeHash, now);
    const account = accountId === null ? null : await resetPasswordHash(tx, accountId, passwordHash);
    if (account === null) return false;
    // Every session and every other reset code ends with this reset. It is also the owner's way
    // back from a sign-in lock-out, so the throttle of the account is cleared.
    await revokeAllSessions(tx, account.id);
    await recordEvent(tx, account.id, 'password-reset', ctx.clientAddress, null, now);
    await deleteCodes(tx, account.id, 'reset');
    await clearThrottle(tx, throttleIdentifiers(deps, account));
    await enqueueMail(tx, passwordResetMail(account.email, account.name, now, ctx.clientAddress), deps.sealer, now);
    await deps.webhooks.enqueue(tx, 'password.reset', account.publicId, now);
    return true;
  });
  // A concurrent request used the code first.
  if (!reset) throw new HttpError(problems.unknownCode);
  deps.outbox.wake();
  deps.webhooks.wake();
  return { status: 204 };
};
