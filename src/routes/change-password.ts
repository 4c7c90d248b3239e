import { authenticate, clientOf, invalidToken } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, throttled } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { changePassword } from '../use-cases/change-password.ts';
import { passwordChangeSchema, validateFields } from '../validation.ts';

/** PUT /acc/me/pwd: change the password, end every session of the account (the caller's too), notify the owner. */
export const changePasswordRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), passwordChangeSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  // Both values come from this request, so comparing them plainly leaks nothing stored.
  if (value.old_pwd.normalize('NFC') === value.new_pwd.normalize('NFC')) {
    throw invalidFields([{ name: 'new_pwd', reason: 'must differ from old_pwd' }]);
  }
  const result = await changePassword(deps, caller, value.old_pwd, value.new_pwd, clientOf(ctx));
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  if (result.outcome === 'wrong-password') throw new HttpError(problems.wrongPassword);
  // The caller's session was ended meanwhile (by a concurrent change, say), and this token with it.
  if (result.outcome === 'session-ended') throw invalidToken();
  return { status: 204 };
};
