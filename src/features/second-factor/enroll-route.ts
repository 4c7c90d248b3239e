import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { HttpError, problems, quotaRefused } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { enrollTotp } from './factor.ts';
import { totpEnrollmentSchema } from './fields.ts';

/**
 * POST /acc/me/totp: start enrolling a TOTP second factor (features/second-factor/factor.ts), and mail
 * the account a code. The answer's secret works once confirmed with that code (POST
 * /acc/me/totp/confirm); asking again replaces both.
 */
export const enrollSecondFactor: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, totpEnrollmentSchema);
  const result = await enrollTotp(deps, caller, value.pwd, clientOf(ctx));
  if (result.outcome === 'active') {
    throw new HttpError(problems.totpActive, { detail: 'Disable the active factor first (DELETE /acc/me/totp).' });
  }
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  if (result.outcome !== 'enrolled') throw callerRefusal(result);
  return { status: 200, body: { secret: result.secret, uri: result.uri } };
};
