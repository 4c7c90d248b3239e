import { HttpError, problems } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';

/**
 * GET /.well-known/oauth-authorization-server: RFC 8414 metadata, so that OAuth clients find the
 * token and revocation endpoints by discovery. RFC 8414 §3 makes the issuer a URL, and the
 * metadata of issuer `https://host` lives at `https://host/.well-known/oauth-authorization-server`;
 * its `issuer` must be that same URL (§3.3), and it is also the `iss` of every token. So the
 * metadata is published only when TOKEN_ISSUER is this service's public URL with no path;
 * any other issuer (the default `account-service`, say) answers 404, as there is nothing
 * true to publish.
 */
export const getAuthorizationServerMetadata: Handler = async (_ctx, deps) => {
  const issuer = deps.config.tokenIssuer;
  const base = issuerBase(issuer);
  if (base === null) {
    const detail =
      'Discovery needs TOKEN_ISSUER to be the public URL of this service, such as https://accounts.example.com.';
    throw new HttpError(problems.notFound, { detail });
  }
  return {
    status: 200,
    body: {
      issuer,
      token_endpoint: new URL('/auth/token', base).href,
      revocation_endpoint: new URL('/auth/revoke', base).href,
      grant_types_supported: ['password', 'refresh_token', ...deps.grants.map((grant) => grant.type)],
      // Public clients only: the endpoints take no client credentials (RFC 6749 §2.1).
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      // Required by RFC 8414 §2; empty, because there is no authorization endpoint to send a response_type to.
      response_types_supported: [],
      // With a provider's sign-in (authorization_code): PKCE S256 only, and `iss` on every redirect (RFC 9207).
      ...(deps.grants.some((grant) => grant.type === 'authorization_code')
        ? { code_challenge_methods_supported: ['S256'], authorization_response_iss_parameter_supported: true }
        : {}),
      // Only where there are public keys to verify with (TOKEN_ALG=ES256).
      ...(deps.signingKeys === null ? {} : { jwks_uri: new URL('/.well-known/jwks.json', base).href }),
    },
  };
};

/** The issuer as a base URL when it is an http(s) origin as written (an optional `/`, nothing else), else null. */
function issuerBase(issuer: string): URL | null {
  if (!URL.canParse(issuer)) return null;
  const url = new URL(issuer);
  const isOrigin = issuer === url.origin || issuer === `${url.origin}/`;
  return (url.protocol === 'https:' || url.protocol === 'http:') && isOrigin ? url : null;
}
