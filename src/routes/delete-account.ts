import { deleteAccount as deleteAccountRow } from '../accounts/accounts.ts';
import { authenticate, checkThrottledPassword, invalidToken, signedInIdentifier } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { clearThrottle } from '../accounts/login-throttle.ts';
import { throttleIdentifiers } from '../http/auth.ts';
import { accountDeletedMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { recordFailedSignIn } from '../accounts/security-events.ts';
import { secondFactorGate } from '../use-cases/second-factor.ts';
import { accountDeletionSchema, validateFields } from '../validation.ts';
import { secondFactorRefusal } from '../http/second-factor.ts';

/**
 * DELETE /acc/me: erase the account (the right to erasure). The current password is required
 * and throttled like a sign-in, so that a stolen token alone cannot delete an account. In one
 * transaction the account and everything of it go (sessions, codes, events by cascade; its
 * throttle and quota rows and its past mail by key), so that its name and address are free
 * at once; only the notice queued here stays, until it is sent.
 */
export const deleteAccount: Handler = async (ctx, deps) => {
  const { account, sessionId } = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), accountDeletionSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  // Second factor (issue 23): with an active factor, `otp` is needed too, checked once the password is proven.
  const secondFactor = secondFactorGate(deps, account, (value.otp as string | null) ?? undefined, ctx.clientAddress, sessionId, deps.clock());
  if (!(await checkThrottledPassword(deps, ctx, signedInIdentifier(account), value.pwd, account.passwordHash, secondFactor.check))) {
    await recordFailedSignIn(deps.sql, account.id, ctx.clientAddress, sessionId, deps.clock());
    throw secondFactorRefusal(secondFactor.outcome) ?? new HttpError(problems.wrongPassword);
  }
  const now = deps.clock();
  const deleted = await deps.sql.begin(async (tx) => {
    if (!(await deleteAccountRow(tx, account.id, sessionId, [deps.keys.address(account.email)]))) return false;
    await clearThrottle(tx, throttleIdentifiers(deps, account));
    await enqueueMail(tx, accountDeletedMail(account.email, account.name, now, ctx.clientAddress), deps.sealer, now);
    return true;
  });
  // The caller's session was revoked meanwhile (a concurrent password change, say), which won.
  if (!deleted) throw invalidToken();
  deps.metrics.increment('accounts_deleted_total');
  deps.outbox.wake();
  return { status: 204 };
};
