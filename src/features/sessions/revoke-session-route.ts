import { authenticate, clientOf } from '../../core/auth.ts';
import { HttpError, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { isUuid } from '../../http/validate.ts';
import { endSession } from './end-session.ts';

/**
 * DELETE /acc/me/sessions/{id}: sign one session out, the caller's own included. Another
 * account's session id is answered exactly like one that never existed: 404.
 */
export const revokeSession: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  const id = ctx.params.id ?? '';
  const ended = isUuid(id) && (await endSession(deps, account.id, id, clientOf(ctx)));
  if (!ended) throw new HttpError(problems.unknownSession);
  return { status: 204 };
};
