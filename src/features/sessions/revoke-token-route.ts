import { clientOf } from '../../core/auth.ts';
import { OAuthError } from '../../http/errors.ts';
import { readOAuthParameters, stringParameter } from '../../http/oauth.ts';
import type { Handler } from '../../http/router.ts';
import { revokeToken } from './end-session.ts';

const maxTokenLength = 4096;

/**
 * POST /auth/revoke (RFC 7009): revokes the session of a refresh or access token. 200 for an
 * unknown token too (§2.2): the caller learns nothing about tokens it does not hold.
 */
export const revokeTokenRoute: Handler = async (ctx, deps) => {
  const params = await readOAuthParameters(ctx.req);
  const token = stringParameter(params, 'token', maxTokenLength);
  const hint = params.token_type_hint;
  if (hint !== undefined && typeof hint !== 'string') {
    throw new OAuthError('invalid_request', 'token_type_hint must be a string.');
  }
  // The hint only says where to look first (§2.1); both kinds are tried whatever it says.
  const claims = deps.tokens.verifyToken(token, deps.clock());
  await revokeToken(deps, claims === null ? { refreshToken: token } : { claims }, clientOf(ctx));
  // The body is ignored by the RFC, but OAuth client libraries parse every answer as JSON.
  return { status: 200, body: {} };
};
