import { authenticate, clientOf, invalidToken } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, throttled } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { enrollTotp } from '../use-cases/second-factor.ts';
import { totpEnrollmentSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/me/totp: start enrolling a TOTP second factor (use-cases/second-factor.ts). The
 * answer's secret works once confirmed (POST /acc/me/totp/confirm); asking again replaces it.
 */
export const enrollSecondFactor: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), totpEnrollmentSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const result = await enrollTotp(deps, caller, value.pwd, clientOf(ctx));
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  // The caller's session was ended meanwhile (a concurrent password change, say), which won.
  if (result.outcome === 'session-ended') throw invalidToken();
  if (result.outcome === 'wrong-password') throw new HttpError(problems.wrongPassword);
  if (result.outcome !== 'enrolled') throw new HttpError(problems.totpActive, { detail: 'Disable the active factor first (DELETE /acc/me/totp).' });
  return { status: 200, body: { secret: result.secret, uri: result.uri } };
};
