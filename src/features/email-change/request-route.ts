import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { quotaRefused } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { negotiateLocale } from '../../config/locales.ts';
import { requestEmailChange } from './request.ts';
import { emailChangeRequestSchema } from './fields.ts';

/**
 * POST /acc/me/email: ask to move the account to a new address (features/email-change/request.ts).
 * 204 whatever the new address holds. Checks in this order: token 401, body 400, throttle 429,
 * password 403, second factor 403, the new address's quota 429.
 */
export const requestEmailChangeRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, emailChangeRequestSchema);
  // `otp` is optional in the schema, required by the use case when a second factor is active.
  const otp = (value.otp as string | null) ?? undefined;
  const locale = negotiateLocale(ctx.req.headers['accept-language'], deps.mailer.locales);
  const result = await requestEmailChange(deps, caller, value.pwd, otp, value.email, clientOf(ctx), locale);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  if (result.outcome !== 'requested') throw callerRefusal(result);
  return { status: 204 };
};
