import { authenticate } from '../http/auth.ts';
import { requireRelyingParty } from '../http/relying-party.ts';
import type { Handler } from '../http/router.ts';
import { isoUtc } from '../format.ts';
import { listAccountPasskeys, type Passkey } from '../use-cases/passkeys.ts';

/** GET /acc/me/passkeys: the account's passkeys, oldest first. */
export const listPasskeysRoute: Handler = async (ctx, deps) => {
  requireRelyingParty(deps);
  const { account } = await authenticate(ctx, deps);
  return { status: 200, body: { passkeys: (await listAccountPasskeys(deps, account.id)).map(passkeyBody) } };
};

export function passkeyBody(passkey: Passkey): Record<string, unknown> {
  const { id, name, createdAt, lastUsedAt, backedUp, transports } = passkey;
  const last_used_at = lastUsedAt === null ? null : isoUtc(lastUsedAt);
  return { id, name, created_at: isoUtc(createdAt), last_used_at, backed_up: backedUp, transports };
}
