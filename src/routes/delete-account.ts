import { authenticate, callerRefusal, clientOf } from '../http/auth.ts';
import { readValidBody } from '../http/body.ts';
import type { Handler } from '../http/router.ts';
import { deleteAccount } from '../use-cases/delete-account.ts';
import { accountDeletionSchema } from '../validation.ts';

/** DELETE /acc/me: erase the account and everything of it (use-cases/delete-account.ts). */
export const deleteAccountRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, accountDeletionSchema);
  // Second factor (issue 23): `otp` is optional in the schema, required by the use case when a factor is active.
  const result = await deleteAccount(deps, caller, value.pwd, (value.otp as string | null) ?? undefined, clientOf(ctx));
  if (result.outcome !== 'deleted') throw callerRefusal(result);
  return { status: 204 };
};
