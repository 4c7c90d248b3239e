import { HttpError, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';

/**
 * GET /.well-known/jwks.json: the public keys that verify access tokens (RFC 7517), with
 * TOKEN_ALG=ES256: the key that signs, the next one once rotated, and the replaced ones until
 * their tokens expire. With HS256 there is no public key to publish: 404.
 */
export const getJwks: Handler = async (_ctx, deps) => {
  if (deps.signingKeys === null) {
    const detail = 'Tokens are signed with HS256 (TOKEN_ALG); a key set is published only with TOKEN_ALG=ES256.';
    throw new HttpError(problems.notFound, { detail });
  }
  return { status: 200, body: await deps.signingKeys.jwks() };
};
