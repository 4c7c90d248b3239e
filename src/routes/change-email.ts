import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { changeEmail } from '../use-cases/change-email.ts';
import { emailChangeSchema, validateFields } from '../validation.ts';

const refusals = {
  'unknown-code': () => new HttpError(problems.unknownCode),
  expired: () => new HttpError(problems.codeExpired, { detail: 'Ask for the change again.' }),
  'address-taken': () => new HttpError(problems.emailTaken, { detail: 'Another account took this address after the code was sent.' }),
} as const;

/** POST /acc/email: confirm an e-mail change with the code mailed to the new address. */
export const handleEmailChangeConfirmation: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), emailChangeSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const result = await changeEmail(deps, value.code, ctx.clientAddress);
  if (result.outcome !== 'changed') throw refusals[result.outcome]();
  deps.outbox.wake();
  return { status: 204 };
};
