import { authenticate, checkThrottledPassword, signedInIdentifier } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { secondFactorRefusal } from '../http/second-factor.ts';
import { recordFailedSignIn } from '../accounts/security-events.ts';
import { disableTotp, secondFactorGate } from '../use-cases/second-factor.ts';
import { totpRemovalSchema, validateFields } from '../validation.ts';

/**
 * DELETE /acc/me/totp: disable the second factor. Both the password and an otp (a TOTP code or a
 * recovery code) are required, under the sign-in throttle, so that neither a stolen token nor
 * a stolen password alone removes it.
 */
export const disableSecondFactor: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), totpRemovalSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const secondFactor = secondFactorGate(deps, account, value.otp, ctx.clientAddress, sessionId, deps.clock());
  if (!(await checkThrottledPassword(deps, ctx, signedInIdentifier(account), value.pwd, account.passwordHash, secondFactor.check))) {
    await recordFailedSignIn(deps.sql, account.id, ctx.clientAddress, sessionId, deps.clock());
    throw secondFactorRefusal(secondFactor.outcome) ?? new HttpError(problems.wrongPassword);
  }
  if (secondFactor.outcome === 'none' || !(await disableTotp(deps, account, ctx.clientAddress, sessionId, deps.clock()))) {
    throw new HttpError(problems.totpNotActive);
  }
  deps.outbox.wake();
  return { status: 204 };
};
