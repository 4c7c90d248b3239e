import { recordFailedSignIn } from '../accounts/security-events.ts';
import { authenticate, checkThrottledPassword, invalidToken, signedInIdentifier } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, quotaRefused } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { requestEmailChange } from '../use-cases/request-email-change.ts';
import { emailChangeRequestSchema, validateFields } from '../validation.ts';

/**
 * POST /acc/me/email: ask to move the account to a new address. 204 whatever the new address
 * holds (see the use case); checks in this order: token 401, body 400, throttle 429, password
 * 403, the new address's quota 429.
 */
export const handleEmailChangeRequest: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), emailChangeRequestSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  // A stolen token alone must not move the account: the password is checked under the sign-in
  // throttle, and a wrong one counts as a failure, as for a password change or a deletion.
  if (!(await checkThrottledPassword(deps, ctx, signedInIdentifier(account), value.pwd, account.passwordHash))) {
    await recordFailedSignIn(deps.sql, account.id, ctx.clientAddress, sessionId, deps.clock());
    throw new HttpError(problems.wrongPassword);
  }
  // SECOND FACTOR: the one place where `otp` plugs in once TOTP exists (issue 23). Add `otp` to
  // emailChangeRequestSchema (optional), and check it here, after the password and under the
  // same throttle, for an account whose factor is active.

  const result = await requestEmailChange(deps, { accountId: account.id, sessionId, newEmail: value.email, clientAddress: ctx.clientAddress });
  if (result.outcome === 'session-ended') throw invalidToken();
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  // Not at once: see wakeLater. What the new mailbox gets differs with what the address holds,
  // and its sending must not be timed from this request.
  deps.outbox.wakeLater();
  return { status: 204 };
};
