import { clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { checkCode } from '../../core/one-time-codes.ts';
import { HttpError, invalidFields, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { resetPassword } from './reset.ts';
import { passwordResetSchema } from '../../core/fields.ts';

/**
 * POST /acc/pwd: set a new password with a reset code. The body is checked before the code is
 * touched, so a refused password never uses the code up. No token is returned: the user signs
 * in as usual.
 */
export const resetPasswordRoute: Handler = async (ctx, deps) => {
  const value = await readValidBody(ctx.req, passwordResetSchema);
  const weak = await deps.screenPassword(value.new_pwd);
  if (weak !== null) throw invalidFields([{ name: 'new_pwd', reason: weak }]);
  const code = await checkCode(deps, 'reset', value.code);
  // A concurrent request used the code first.
  const removePasskeys = value.passkeys === 'remove';
  if (!(await resetPassword(deps, code.accountId, code.codeHash, value.new_pwd, clientOf(ctx), removePasskeys))) {
    throw new HttpError(problems.unknownCode);
  }
  return { status: 204 };
};
