import { authenticate, clientOf, invalidToken } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, quotaRefused, throttled } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { requestEmailChange } from '../use-cases/request-email-change.ts';
import { emailChangeRequestSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/me/email: ask to move the account to a new address (use-cases/request-email-change.ts).
 * 204 whatever the new address holds. Checks in this order: token 401, body 400, throttle 429,
 * password 403, second factor 403, the new address's quota 429.
 */
export const requestEmailChangeRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), emailChangeRequestSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  // `otp` is optional in the schema, required by the use case when a second factor is active.
  const result = await requestEmailChange(deps, caller, value.pwd, (value.otp as string | null) ?? undefined, value.email, clientOf(ctx));
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  if (result.outcome === 'wrong-password') throw new HttpError(problems.wrongPassword);
  if (result.outcome === 'otp-required') throw new HttpError(problems.otpRequired);
  if (result.outcome === 'wrong-otp') throw new HttpError(problems.wrongOtp);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  // The caller's session was ended meanwhile (a concurrent password change, say), which won.
  if (result.outcome === 'session-ended') throw invalidToken();
  return { status: 204 };
};
