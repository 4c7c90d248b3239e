import { isIP } from 'node:net';
import { ConfigError } from '../../config/config.ts';

/** One OpenID provider as the operator configured it (OIDC_<NAME>_*). */
export type OidcProvider = {
  name: string; issuer: string; clientId: string; clientSecret: string;
  /** OIDC_<NAME>_TRUST_EMAIL: the provider is authoritative for the addresses it says it verified. */
  trustEmail: boolean;
};

export type OidcSettings = {
  providers: OidcProvider[];
  /** The applications' own addresses the service may send a browser back to, matched exactly. */
  redirectUris: string[];
  /** TOKEN_ISSUER without a trailing slash: the callback is `${base}/auth/oidc/<name>/callback`. */
  base: string;
};

const webUrl = 'https (http only on a loopback host)';

/**
 * OIDC_PROVIDERS (names of lower-case letters, digits and hyphens) and, for each name upper-cased
 * with `_` for `-`, OIDC_<NAME>_ISSUER, _CLIENT_ID, _CLIENT_SECRET and _TRUST_EMAIL; then
 * OIDC_REDIRECT_URIS. Null when OIDC_PROVIDERS is unset: the feature's routes answer 404.
 * Each refusal is one line naming the variable; a secret's value is never repeated.
 */
export function parseOidcSettings(env: NodeJS.ProcessEnv, tokenIssuer: string): OidcSettings | null {
  const list = (name: string) => (env[name] ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  const check = (valid: boolean, message: string) => {
    if (!valid) throw new ConfigError(message);
  };
  const names = list('OIDC_PROVIDERS');
  if (names.length === 0) {
    check(!env.OIDC_REDIRECT_URIS, 'OIDC_REDIRECT_URIS is set but OIDC_PROVIDERS is not');
    return null;
  }
  const badName = names.find((name, index) => !/^[a-z0-9-]{1,32}$/.test(name) || names.indexOf(name) !== index);
  check(badName === undefined, 'OIDC_PROVIDERS must list distinct names of 1 to 32 lower-case letters, digits and ' +
    `hyphens, got ${JSON.stringify(badName?.slice(0, 40))}`);
  check(isWebUrl(tokenIssuer), 'OIDC_PROVIDERS needs TOKEN_ISSUER to be the service\'s public URL, ' +
    `${webUrl}: the providers send browsers back to TOKEN_ISSUER/auth/oidc/<name>/callback`);
  const providers = names.map((name) => {
    const prefix = `OIDC_${name.toUpperCase().replaceAll('-', '_')}_`;
    const [issuer = '', clientId = '', clientSecret = '', trust = 'false'] =
      ['ISSUER', 'CLIENT_ID', 'CLIENT_SECRET', 'TRUST_EMAIL'].map((key) => env[prefix + key]);
    check(isWebUrl(issuer) && !/[?#]/.test(issuer), `${prefix}ISSUER must be the provider's issuer URL, ${webUrl}, ` +
      `without a query or fragment, got ${JSON.stringify(issuer.slice(0, 200))}`);
    check(/^[\x21-\x7e]{1,200}$/.test(clientId), `${prefix}CLIENT_ID must be 1 to 200 printable characters`);
    check(/^[\x20-\x7e]{1,512}$/.test(clientSecret), `${prefix}CLIENT_SECRET must be 1 to 512 printable characters`);
    check(trust === 'true' || trust === 'false', `${prefix}TRUST_EMAIL must be true or false`);
    return { name, issuer, clientId, clientSecret, trustEmail: trust === 'true' };
  });
  const redirectUris = list('OIDC_REDIRECT_URIS');
  const badUri = redirectUris.find((uri) => !isWebUrl(uri) || uri.includes('#'));
  check(redirectUris.length > 0 && badUri === undefined, 'OIDC_REDIRECT_URIS must list the applications\' own ' +
    `addresses where a sign-in ends, comma-separated, ${webUrl}, without a fragment` +
    (badUri === undefined ? '' : `, got ${JSON.stringify(badUri.slice(0, 200))}`));
  return { providers, redirectUris, base: tokenIssuer.replace(/\/+$/, '') };
}

/** An https URL, or an http one whose host is loopback; no user or password in it. */
function isWebUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
  return url.username === '' && (url.protocol === 'https:' || (url.protocol === 'http:' && loopback));
}
