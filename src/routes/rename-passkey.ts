import { authenticate } from '../http/auth.ts';
import { readValidBody } from '../http/body.ts';
import { HttpError, problems } from '../http/errors.ts';
import { requireRelyingParty } from '../http/relying-party.ts';
import type { Handler } from '../http/router.ts';
import { renameAccountPasskey } from '../use-cases/passkeys.ts';
import { isUuid, passkeyRenameSchema } from '../validation.ts';
import { passkeyBody } from './list-passkeys.ts';

/** PATCH /acc/me/passkeys/{id}: a new name. Another account's id is answered like an unknown one: 404. */
export const renamePasskeyRoute: Handler = async (ctx, deps) => {
  requireRelyingParty(deps);
  const { account } = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, passkeyRenameSchema);
  const id = ctx.params.id ?? '';
  const passkey = isUuid(id) ? await renameAccountPasskey(deps, account.id, id, value.name) : null;
  if (passkey === null) throw new HttpError(problems.unknownPasskey);
  return { status: 200, body: passkeyBody(passkey) };
};
