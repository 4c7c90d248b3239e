import { clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { checkCode } from '../../core/one-time-codes.ts';
import { HttpError, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { changeEmail } from './confirm.ts';
import { emailChangeSchema } from './fields.ts';

/** POST /acc/email: confirm an e-mail change with the codes mailed to the new and to the current address. */
export const changeEmailRoute: Handler = async (ctx, deps) => {
  const value = await readValidBody(ctx.req, emailChangeSchema);
  const code = await checkCode(deps, 'email-change', value.code);
  const { accountId: id, publicId, name, email, locale } = code;
  const account = { id, publicId, name, email, locale };
  const result = await changeEmail(deps, account, code.codeHash, value.current_code, clientOf(ctx));
  if (result.outcome === 'unknown-code') throw new HttpError(problems.unknownCode);
  if (result.outcome === 'address-taken') {
    throw new HttpError(problems.emailTaken, { detail: 'Another account took this address after the code was sent.' });
  }
  return { status: 204 };
};
