import { clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { checkCode } from '../../core/one-time-codes.ts';
import { HttpError, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { activateAccount } from './activate.ts';
import { activationSchema } from '../../core/fields.ts';

/** POST /acc/reg: turn the pending registration that holds this code into an active account. */
export const activateAccountRoute: Handler = async (ctx, deps) => {
  const value = await readValidBody(ctx.req, activationSchema);
  const code = await checkCode(deps, 'registration', value.code);
  const { accountId: id, publicId, name, email, locale } = code;
  const pending = { id, publicId, name, email, locale };
  // A concurrent request used the code first.
  if (!(await activateAccount(deps, pending, code.codeHash, clientOf(ctx)))) throw new HttpError(problems.unknownCode);
  return { status: 204 };
};
