import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import { HttpError, problems, quotaRefused } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { deleteAccount } from './delete.ts';
import { accountDeletionSchema } from '../../core/fields.ts';

/**
 * DELETE /acc/me: with `pwd` (and `otp` when a factor is active), 202 and a code mailed to the
 * account's address; with that code as `email_code` too, the account and everything of it
 * are erased (features/account/delete.ts).
 */
export const deleteAccountRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, accountDeletionSchema);
  const otp = (value.otp as string | null) ?? undefined;
  const emailCode = (value.email_code as string | null) ?? undefined;
  const result = await deleteAccount(deps, caller, value.pwd, otp, emailCode, clientOf(ctx));
  if (result.outcome === 'deleted') return { status: 204 };
  if (result.outcome === 'code-sent') return { status: 202 };
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  if (result.outcome === 'wrong-code') throw new HttpError(problems.wrongEmailCode);
  throw callerRefusal(result);
};
