import { readJsonObject } from '../http/body.ts';
import { checkCode } from '../http/codes.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { accountActiveMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { consumeCode } from '../accounts/one-time-codes.ts';
import { activateRegistration } from '../accounts/registrations.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { activationSchema, validateFields } from '../validation.ts';

/** POST /acc/reg: turn the pending registration that holds this code into an active account. */
export const activateAccount: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), activationSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const codeHash = await checkCode(deps, 'registration', value.code);
  const now = deps.clock();
  const activated = await deps.sql.begin(async (tx) => {
    const accountId = await consumeCode(tx, 'registration', codeHash, now);
    const account = accountId === null ? null : await activateRegistration(tx, accountId, now);
    if (account === null) return false;
    await recordEvent(tx, accountId, 'activated', ctx.clientAddress, null, now);
    await enqueueMail(tx, accountActiveMail(account.email, account.name), deps.sealer, now);
    await deps.webhooks.enqueue(tx, 'account.activated', account.publicId, now);
    return true;
  });
  // A concurrent request used the code first.
  if (!activated) throw new HttpError(problems.unknownCode);
  deps.outbox.wake();
  deps.webhooks.wake();
  return { status: 204 };
};
