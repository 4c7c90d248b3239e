import { authenticate, checkThrottledPassword, signedInIdentifier } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { recordFailedSignIn } from '../accounts/security-events.ts';
import { enrollTotp } from '../use-cases/second-factor.ts';
import { totpEnrollmentSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/me/totp: start enrolling a TOTP second factor. The password is required (throttled
 * like a sign-in), so that a stolen token alone cannot tie the account to a thief's app. The
 * answer's secret works once confirmed (POST /acc/me/totp/confirm); asking again replaces it.
 */
export const enrollSecondFactor: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), totpEnrollmentSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  if (!(await checkThrottledPassword(deps, ctx, signedInIdentifier(account), value.pwd, account.passwordHash))) {
    await recordFailedSignIn(deps.sql, account.id, ctx.clientAddress, sessionId, deps.clock());
    throw new HttpError(problems.wrongPassword);
  }
  const enrollment = await enrollTotp(deps, account, deps.clock());
  if (enrollment === null) throw new HttpError(problems.totpActive, { detail: 'Disable the active factor first (DELETE /acc/me/totp).' });
  return { status: 200, body: enrollment };
};
