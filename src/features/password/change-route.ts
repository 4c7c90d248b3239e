import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { invalidFields } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { changePassword } from './change.ts';
import { passwordChangeSchema } from '../../core/fields.ts';

/** PUT /acc/me/pwd: change the password, end every session of the account (the caller's too), notify the owner. */
export const changePasswordRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, passwordChangeSchema);
  // Both values come from this request, so comparing them plainly leaks nothing stored.
  if (value.old_pwd.normalize('NFC') === value.new_pwd.normalize('NFC')) {
    throw invalidFields([{ name: 'new_pwd', reason: 'must differ from old_pwd' }]);
  }
  const weak = await deps.screenPassword(value.new_pwd);
  if (weak !== null) throw invalidFields([{ name: 'new_pwd', reason: weak }]);
  const result = await changePassword(deps, caller, value.old_pwd, value.new_pwd, clientOf(ctx));
  if (result.outcome !== 'changed') throw callerRefusal(result);
  return { status: 204 };
};
