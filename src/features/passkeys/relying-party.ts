import type { RelyingParty } from './webauthn.ts';
import { HttpError, problems } from '../../http/errors.ts';
import type { Deps } from '../../http/router.ts';

/** The token endpoint's grant for a passkey sign-in, published in the RFC 8414 metadata. */
export const passkeyGrantType = 'urn:account-service:grant-type:passkey';

/** The configured relying party of the passkey routes; without one they answer 404, naming the settings. */
export function requireRelyingParty(deps: Deps): RelyingParty {
  if (deps.config.webauthn !== null) return deps.config.webauthn;
  const detail = 'Passkeys are off: set WEBAUTHN_RP_ID and WEBAUTHN_ORIGINS (and WEBAUTHN_RP_NAME).';
  throw new HttpError(problems.passkeysOff, { detail });
}
