import { authenticate, clientOf, invalidToken } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, quotaRefused, throttled } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { requestEmailChange } from '../use-cases/request-email-change.ts';
import { emailChangeRequestSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/me/email: ask to move the account to a new address (use-cases/request-email-change.ts).
 * 204 whatever the new address holds. Checks in this order: token 401, body 400, throttle 429,
 * password 403, the new address's quota 429.
 */
export const requestEmailChangeRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), emailChangeRequestSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const result = await requestEmailChange(deps, caller, value.pwd, value.email, clientOf(ctx));
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  if (result.outcome === 'wrong-password') throw new HttpError(problems.wrongPassword);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  // The caller's session was ended meanwhile (a concurrent password change, say), which won.
  if (result.outcome === 'session-ended') throw invalidToken();
  return { status: 204 };
};
