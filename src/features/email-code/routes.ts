import { clientOf, signInAllowance, takeAccountAllowance } from '../../core/auth.ts';
import { patterns } from '../../core/fields.ts';
import { readValidBody } from '../../http/body.ts';
import { OAuthError, quotaRefused } from '../../http/errors.ts';
import { otpParameter, signInReply, stringParameter, type TokenGrant } from '../../http/oauth.ts';
import type { Deps, Handler, Reply, RequestContext } from '../../http/router.ts';
import { field } from '../../http/validate.ts';
import { requestSignInCode, signInWithEmailCode } from './sign-in.ts';

export const emailCodeGrantType = 'urn:account-service:grant-type:email-code';
export const signInCodeRequestSchema = { email: field(patterns.email) };

/**
 * POST /auth/code `{email}`: 204 alike for every address; a code is mailed moments later only
 * to an active account's address (features/email-code/sign-in.ts). 429 from the address's quota.
 */
export const requestSignInCodeRoute: Handler = async (ctx, deps) => {
  const value = await readValidBody(ctx.req, signInCodeRequestSchema);
  const result = await requestSignInCode(deps, value.email, ctx.clientAddress);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  return { status: 204 };
};

/**
 * The e-mailed code grant of POST /auth/token: `email`, `code`, and `otp` when the account has
 * a second factor. A wrong, used or expired code, or one of another address, is invalid_grant.
 */
async function grantWithEmailCode(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply> {
  const email = stringParameter(params, 'email', 254);
  const code = stringParameter(params, 'code', 32);
  const otp = otpParameter(params, patterns.otp);
  if (!patterns.email.test(email)) throw new OAuthError('invalid_request', 'email must be an e-mail address.');
  if (!patterns.code.test(code)) throw new OAuthError('invalid_request', 'code must be the code of the mail.');
  const takeAllowance = (accountId: string) =>
    takeAccountAllowance(deps, signInAllowance(accountId, ctx.clientAddress));
  const result = await signInWithEmailCode(deps, email, code, otp, clientOf(ctx), takeAllowance);
  const refused = 'The code is unknown, expired, used, or not for this address; or the otp is wrong, which uses it up.';
  return signInReply(deps, result, refused);
}

/** The grant of POST /auth/token, handed to the endpoint at wiring time while email-code is on. */
export const emailCodeGrant: TokenGrant = { type: emailCodeGrantType, handle: grantWithEmailCode };
