import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { HttpError, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { confirmTotp } from './factor.ts';
import { totpConfirmationSchema } from './fields.ts';

const refusals = {
  'not-pending': problems.totpNotPending,
  active: problems.totpActive,
  wrong: problems.wrongOtp,
  'wrong-email-code': problems.wrongEmailCode,
} as const;

/**
 * POST /acc/me/totp/confirm: a right code of the pending secret and the code mailed by the
 * enrollment (`email_code`) activate the factor, and end the account's other sessions. The ten
 * recovery codes are in this answer and nowhere else: only their hashes are stored.
 */
export const confirmSecondFactor: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, totpConfirmationSchema);
  const result = await confirmTotp(deps, caller, value.code, value.email_code, clientOf(ctx));
  if (result.outcome === 'throttled' || result.outcome === 'session-ended') throw callerRefusal(result);
  if (result.outcome !== 'confirmed') throw new HttpError(refusals[result.outcome]);
  return { status: 200, body: { recovery_codes: result.recoveryCodes } };
};
