import { authenticate, clientOf, invalidToken } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, throttled } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { confirmTotp } from '../use-cases/second-factor.ts';
import { totpConfirmationSchema, validateFields } from '../validation.ts';

const refusals = { 'not-pending': problems.totpNotPending, active: problems.totpActive, wrong: problems.wrongOtp } as const;

/**
 * POST /acc/me/totp/confirm: a right code of the pending secret activates the factor. The ten
 * recovery codes are in this answer and nowhere else: only their hashes are stored.
 */
export const confirmSecondFactor: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), totpConfirmationSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const result = await confirmTotp(deps, caller, value.code, clientOf(ctx));
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  // The caller's session was ended meanwhile (a concurrent password change, say), which won.
  if (result.outcome === 'session-ended') throw invalidToken();
  if (result.outcome !== 'confirmed') throw new HttpError(refusals[result.outcome]);
  return { status: 200, body: { recovery_codes: result.recoveryCodes } };
};
