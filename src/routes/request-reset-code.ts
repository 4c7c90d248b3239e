import { reserveAddressRequest } from '../accounts/address-quotas.ts';
import { readJsonObject } from '../http/body.ts';
import { invalidFields, quotaRefused } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { resetCodeMail } from '../mail/messages.ts';
import { sealMail } from '../mail/outbox.ts';
import { generateCode, hashCode } from '../accounts/one-time-codes.ts';
import { issueResetCode } from '../accounts/password-resets.ts';
import { resetCodeRequestSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/pwd/code: e-mail a reset code to the account with this address. The answer is 204
 * whether or not the address has an account, after the same quota and the same statements.
 */
export const requestResetCode: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), resetCodeRequestSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const now = deps.clock();
  const code = generateCode();
  const expiresAt = new Date(now.getTime() + deps.config.resetCodeTtlSeconds * 1000);
  // Sealed before the address is looked up: the work is the same whether a message is sent or not.
  const mail = sealMail(resetCodeMail(code, expiresAt, now, ctx.clientAddress), deps.sealer);
  await deps.sql.begin(async (tx) => {
    const refusal = await reserveAddressRequest(tx, 'reset', deps.keys.address(value.email), now);
    if (refusal !== null) throw quotaRefused(refusal);
    await issueResetCode(tx, value.email, hashCode(code), expiresAt, mail, ctx.clientAddress, now);
  });
  // Not at once: see wakeLater, the sending must not be timed from this request.
  deps.outbox.wakeLater();
  return { status: 204 };
};
