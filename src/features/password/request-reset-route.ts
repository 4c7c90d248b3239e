import { readValidBody } from '../../http/body.ts';
import { quotaRefused } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { requestResetCode } from './request-reset.ts';
import { resetCodeRequestSchema } from '../../core/fields.ts';

/**
 * POST /acc/pwd/code: e-mail a reset code to the account with this address
 * (features/password/request-reset.ts). 204 whether or not the address has an account; 429 from
 * the address's quota.
 */
export const requestResetCodeRoute: Handler = async (ctx, deps) => {
  const { email } = await readValidBody(ctx.req, resetCodeRequestSchema);
  const result = await requestResetCode(deps, email, ctx.clientAddress);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  return { status: 204 };
};
