import { requireRelyingParty } from './relying-party.ts';
import type { Handler } from '../../http/router.ts';

/**
 * GET /.well-known/webauthn: the origins whose pages may use this relying party's passkeys
 * (WEBAUTHN_ORIGINS), in the form of WebAuthn Level 3's related origins. They are public (every
 * page on them shows them), and publishing them lets an operator's check (check/issuer.ts)
 * compare them with the deployment's URL. 404 while passkeys are off.
 */
export const getWebauthnOrigins: Handler = async (_ctx, deps) => {
  const { origins } = requireRelyingParty(deps);
  return { status: 200, body: { origins } };
};
