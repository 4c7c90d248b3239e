import { authenticate, callerRefusal, clientOf } from '../http/auth.ts';
import { readValidBody } from '../http/body.ts';
import { HttpError, problems } from '../http/errors.ts';
import { requireRelyingParty } from '../http/relying-party.ts';
import type { Handler } from '../http/router.ts';
import { removePasskey } from '../use-cases/passkeys.ts';
import { isUuid, passkeyRemovalSchema } from '../validation.ts';

/** DELETE /acc/me/passkeys/{id} `{pwd}`: 204. Another account's id is answered like an unknown one: 404. */
export const removePasskeyRoute: Handler = async (ctx, deps) => {
  requireRelyingParty(deps);
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, passkeyRemovalSchema);
  const id = ctx.params.id ?? '';
  const result = isUuid(id)
    ? await removePasskey(deps, caller, id, value.pwd, clientOf(ctx))
    : ({ outcome: 'unknown' } as const);
  if (result.outcome === 'unknown') throw new HttpError(problems.unknownPasskey);
  if (result.outcome !== 'removed') throw callerRefusal(result);
  return { status: 204 };
};
