import { authenticate } from '../http/auth.ts';
import { HttpError, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { recordEvent } from '../accounts/security-events.ts';
import { revokeSession } from '../sessions/sessions.ts';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * DELETE /acc/me/sessions/{id}: sign one session out, the caller's own included. Another
 * account's session id is answered exactly like one that never existed: 404.
 */
export const deleteSession: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  const id = ctx.params.id ?? '';
  if (!uuid.test(id)) throw new HttpError(problems.unknownSession);
  const revoked = await deps.sql.begin(async (tx) => {
    if (!(await revokeSession(tx, account.id, id))) return false;
    await recordEvent(tx, account.id, 'session-revoked', ctx.clientAddress, id, deps.clock());
    return true;
  });
  if (!revoked) throw new HttpError(problems.unknownSession);
  return { status: 204 };
};
