import { clientOf, signInAllowance, takeAccountAllowance } from '../../core/auth.ts';
import { OAuthError } from '../../http/errors.ts';
import { signInReply, stringParameter, type TokenGrant } from '../../http/oauth.ts';
import type { Deps, Reply, RequestContext } from '../../http/router.ts';
import { passkeyGrantType, requireRelyingParty } from './relying-party.ts';
import { signInWithPasskey } from './sign-in.ts';

const maxChallengeIdLength = 200;
const maxCredentialLength = 7000;

/**
 * The passkey grant: `challenge_id` from POST /auth/passkey/options and `credential`, the
 * AuthenticationResponseJSON (an object in a JSON body, a JSON string in a form body). Every
 * refusal is the same invalid_grant.
 */
async function grantWithPasskey(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply> {
  const rp = requireRelyingParty(deps);
  const challengeId = stringParameter(params, 'challenge_id', maxChallengeIdLength);
  let credential = params.credential;
  if (typeof credential === 'string' && credential.length <= maxCredentialLength) {
    try {
      credential = JSON.parse(credential);
    } catch {
      throw new OAuthError('invalid_request', 'credential must be an AuthenticationResponseJSON object.');
    }
  }
  if (typeof credential !== 'object' || credential === null) {
    throw new OAuthError('invalid_request', 'credential must be an AuthenticationResponseJSON object.');
  }
  const takeAllowance = (accountId: string) =>
    takeAccountAllowance(deps, signInAllowance(accountId, ctx.clientAddress));
  const result = await signInWithPasskey(deps, rp, challengeId, credential, clientOf(ctx), takeAllowance);
  return signInReply(deps, result, 'The passkey was not accepted.');
}

/** The passkey grant of POST /auth/token, handed to the endpoint at wiring time while passkeys are on. */
export const passkeyGrant: TokenGrant = { type: passkeyGrantType, handle: grantWithPasskey };
