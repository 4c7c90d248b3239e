import { findAccountByLogin, upgradePasswordHash } from '../accounts.ts';
import { parseJsonObject, readText } from '../http/body.ts';
import { checkThrottledPassword } from '../http/auth.ts';
import { OAuthError } from '../http/errors.ts';
import { throttleKey } from '../login-throttle.ts';
import type { Handler } from '../http/router.ts';

const maxUsernameLength = 254;
const maxPasswordLength = 256;

/**
 * POST /auth/token: the OAuth 2.0 resource owner password grant (RFC 6749 §4.3), in JSON or
 * form encoding. Errors follow RFC 6749 §5.2, not RFC 9457, as OAuth clients expect.
 */
export const issueToken: Handler = async (ctx, deps) => {
  const { username, password } = await readTokenRequest(ctx.req);
  const now = deps.clock();
  const account = await findAccountByLogin(deps.sql, username);
  // The same scrypt work and the same answer whether the account is unknown or the password
  // wrong, so that neither timing nor response tells which names exist.
  const valid = await checkThrottledPassword(deps, throttleKey(account?.id ?? null, username), password, account?.passwordHash ?? null);
  if (account === null || !valid) throw new OAuthError('invalid_grant', 'The username or password is incorrect.');

  if (deps.passwords.needsRehash(account.passwordHash)) {
    await upgradePasswordHash(deps.sql, account.id, account.passwordHash, await deps.passwords.hash(password));
  }
  const { token, expiresIn } = deps.tokens.issueToken(account.id, account.credentialVersion, now);
  return {
    status: 200,
    body: { access_token: token, token_type: 'Bearer', expires_in: expiresIn },
    headers: { Pragma: 'no-cache' },
  };
};

async function readTokenRequest(req: Parameters<Handler>[0]['req']): Promise<{ username: string; password: string }> {
  const { mediaType, text } = await readText(req, ['application/json', 'application/x-www-form-urlencoded']);
  const params = mediaType === 'application/json' ? parseJsonObject(text) : parseForm(text);
  // Unknown parameters are ignored, as RFC 6749 §3.2 requires of the server.
  const { grant_type, username, password } = params;
  if (grant_type === undefined) throw new OAuthError('invalid_request', 'grant_type is required.');
  if (grant_type !== 'password') throw new OAuthError('unsupported_grant_type', 'Only grant_type=password is supported.');
  if (typeof username !== 'string' || username.length === 0 || username.length > maxUsernameLength) {
    throw new OAuthError('invalid_request', `username must be a string of 1 to ${maxUsernameLength} characters.`);
  }
  if (typeof password !== 'string' || password.length === 0 || password.length > maxPasswordLength) {
    throw new OAuthError('invalid_request', `password must be a string of 1 to ${maxPasswordLength} characters.`);
  }
  return { username, password };
}

/** Form parameters; a repeated one is refused (RFC 6749 §3.2). */
function parseForm(text: string): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    if (Object.hasOwn(params, key)) throw new OAuthError('invalid_request', `${key.slice(0, 32)} is repeated.`);
    params[key] = value;
  }
  return params;
}
