import type { IncomingMessage } from 'node:http';
import { parseJsonObject, readBody } from './body.ts';
import { OAuthError } from './errors.ts';
import type { Deps, Reply, RequestContext } from './router.ts';
import { isWellFormed, malformedReason } from './validate.ts';

/**
 * The parameters of an OAuth request (token, revocation): form-encoded as RFC 6749 and
 * RFC 7009 say, or a JSON object. A repeated form parameter is refused (RFC 6749 §3.2).
 */
export function readOAuthParameters(req: IncomingMessage): Promise<Record<string, unknown>> {
  return readBody(req, ['application/json', 'application/x-www-form-urlencoded'], (mediaType, text) =>
    mediaType === 'application/json' ? parseJsonObject(text) : parseForm(text));
}

function parseForm(text: string): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(params, key)) throw new OAuthError('invalid_request', `${key.slice(0, 32)} is repeated.`);
    params[key] = value;
  }
  return params;
}

/** A required string parameter of at most `maxLength` characters, else `invalid_request`. */
export function stringParameter(params: Record<string, unknown>, name: string, maxLength: number): string {
  const value = params[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw new OAuthError('invalid_request', `${name} must be a string of 1 to ${maxLength} characters.`);
  }
  // A lone surrogate or a NUL would hash the same as other passwords (validate.ts).
  if (!isWellFormed(value)) throw new OAuthError('invalid_request', `${name} ${malformedReason}.`);
  return value;
}

/** A grant of the token endpoint that a feature adds (its `grant_type`, and what answers it). */
export type TokenGrant = {
  type: string;
  handle(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply>;
};

/** The token endpoint's answer (RFC 6749 §5.1): a new access token beside the session's refresh token. */
export function tokenReply(deps: Deps, accountPublicId: string, sessionId: string, refreshToken: string): Reply {
  const { token, expiresIn } = deps.tokens.issueToken(accountPublicId, sessionId, deps.clock());
  return {
    status: 200,
    body: { access_token: token, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refreshToken },
    headers: { Pragma: 'no-cache' },
  };
}
