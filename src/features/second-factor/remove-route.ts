import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { HttpError, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { disableTotp } from './factor.ts';
import { totpRemovalSchema } from './fields.ts';

/** DELETE /acc/me/totp: disable the second factor; the password and an otp are required. */
export const disableSecondFactor: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, totpRemovalSchema);
  const result = await disableTotp(deps, caller, value.pwd, value.otp, clientOf(ctx));
  if (result.outcome === 'not-active') throw new HttpError(problems.totpNotActive);
  if (result.outcome !== 'disabled') throw callerRefusal(result);
  return { status: 204 };
};
