import { authenticate, checkThrottled, signedInIdentifier } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { confirmTotp, type Confirmation } from '../use-cases/second-factor.ts';
import { totpConfirmationSchema, validateFields } from '../validation.ts';

const refusals = { 'not-pending': problems.totpNotPending, active: problems.totpActive, wrong: problems.wrongOtp } as const;

/**
 * POST /acc/me/totp/confirm: a right code of the pending secret activates the factor. The ten
 * recovery codes are in this answer and nowhere else: only their hashes are stored.
 */
export const confirmSecondFactor: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), totpConfirmationSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  // Wrong codes count in the throttle of the signed-in account, so that a stolen token cannot
  // guess its way through a pending enrollment to the recovery codes.
  let confirmation = { outcome: 'wrong' } as Confirmation;
  await checkThrottled(deps, ctx, signedInIdentifier(account), async () => {
    confirmation = await confirmTotp(deps, account, value.code, ctx.clientAddress, sessionId, deps.clock());
    return confirmation.outcome !== 'wrong';
  });
  if (confirmation.outcome !== 'confirmed') throw new HttpError(refusals[confirmation.outcome]);
  deps.outbox.wake();
  return { status: 200, body: { recovery_codes: confirmation.recoveryCodes } };
};
