import { authenticate, clientOf, invalidToken } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems, throttled } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { deleteAccount } from '../use-cases/delete-account.ts';
import { accountDeletionSchema, validateFields } from '../validation.ts';

/** DELETE /acc/me: erase the account and everything of it (use-cases/delete-account.ts). */
export const deleteAccountRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), accountDeletionSchema);
  if (invalid.length > 0) throw invalidFields(invalid);
  const result = await deleteAccount(deps, caller, value.pwd, clientOf(ctx));
  if (result.outcome === 'throttled') throw throttled(result.retryAfterSeconds);
  if (result.outcome === 'wrong-password') throw new HttpError(problems.wrongPassword);
  // The caller's session was ended meanwhile (a concurrent password change, say), which won.
  if (result.outcome === 'session-ended') throw invalidToken();
  return { status: 204 };
};
