import { authenticate, clientOf, invalidToken } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, throttled } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { disableTotp } from '../use-cases/second-factor.ts';
import { totpRemovalSchema, validateFields } from '../validation.ts';

const refusals = { 'wrong-password': problems.wrongPassword, 'wrong-otp': problems.wrongOtp, 'not-active': problems.totpNotActive } as const;

/** DELETE /acc/me/totp: disable the second factor; the password and an otp are required (use-cases/second-factor.ts). */
export const disableSecondFactor: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), totpRemovalSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const result = await disableTotp(deps, caller, value.pwd, value.otp, clientOf(ctx));
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  // The caller's session was ended meanwhile (a concurrent password change, say), which won.
  if (result.outcome === 'session-ended') throw invalidToken();
  if (result.outcome !== 'disabled') throw new HttpError(refusals[result.outcome]);
  return { status: 204 };
};
