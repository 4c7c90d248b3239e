import { requireRelyingParty } from '../http/relying-party.ts';
import type { Handler } from '../http/router.ts';
import { startPasskeySignIn } from '../use-cases/passkey-sign-in.ts';

/** POST /auth/passkey/options: request options for a usernameless sign-in; the same shape for every caller. */
export const passkeySignInOptionsRoute: Handler = async (_ctx, deps) => {
  const { challengeId, options } = startPasskeySignIn(deps, requireRelyingParty(deps));
  return { status: 200, body: { challenge_id: challengeId, options } };
};
