import { changePasswordHash } from '../accounts/accounts.ts';
import { authenticate, checkThrottledPassword, invalidToken, signedInIdentifier } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { passwordChangedMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { recordEvent, recordFailedSignIn } from '../accounts/security-events.ts';
import { passwordChangeSchema, validateFields } from '../validation.ts';

/** PUT /acc/me/pwd: change the password, end every session of the account (the caller's too), notify the owner. */
export const changePassword: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), passwordChangeSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  // Both values come from this request, so comparing them plainly leaks nothing stored.
  if (value.old_pwd.normalize('NFC') === value.new_pwd.normalize('NFC')) {
    throw invalidFields([{ name: 'new_pwd', reason: 'must differ from old_pwd' }]);
  }
  // A stolen token must not become a way around the sign-in throttle: wrong old passwords count too.
  if (!(await checkThrottledPassword(deps, ctx, signedInIdentifier(account), value.old_pwd, account.passwordHash))) {
    await recordFailedSignIn(deps.sql, account.id, ctx.clientAddress, sessionId, deps.clock());
    throw new HttpError(problems.wrongPassword);
  }

  const newHash = await deps.passwords.hash(value.new_pwd);
  const now = deps.clock();
  const changed = await deps.sql.begin(async (tx) => {
    if (!(await changePasswordHash(tx, account.id, sessionId, newHash))) return false;
    await recordEvent(tx, account.id, 'password-changed', ctx.clientAddress, sessionId, now);
    await enqueueMail(tx, passwordChangedMail(account.email, account.name, now, ctx.clientAddress), deps.sealer, now);
    await deps.webhooks.enqueue(tx, 'password.changed', account.publicId, now);
    return true;
  });
  // The caller's session was revoked meanwhile (by a concurrent change, say), and this token with it.
  if (!changed) throw invalidToken();
  deps.outbox.wake();
  deps.webhooks.wake();
  return { status: 204 };
};
