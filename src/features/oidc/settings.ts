import { isIP } from 'node:net';
import { ConfigError } from '../../config/config.ts';

/** One OpenID provider as the operator configured it (OIDC_<NAME>_*). */
export type OidcProvider = {
  name: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
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

/**
 * OIDC_PROVIDERS (names of lower-case letters, digits and hyphens) and, for each name upper-cased
 * with `_` for `-`, OIDC_<NAME>_ISSUER, _CLIENT_ID, _CLIENT_SECRET and _TRUST_EMAIL; then
 * OIDC_REDIRECT_URIS. Null when OIDC_PROVIDERS is unset: the feature's routes answer 404.
 * An issuer and a redirect URI are https, or http on a loopback host (development and tests).
 */
export function parseOidcSettings(env: NodeJS.ProcessEnv, tokenIssuer: string): OidcSettings | null {
  const names = (env.OIDC_PROVIDERS ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  if (names.length === 0) {
    if (env.OIDC_REDIRECT_URIS) throw new ConfigError('OIDC_REDIRECT_URIS is set but OIDC_PROVIDERS is not');
    return null;
  }
  const bad = names.find((name, index) => !/^[a-z0-9-]{1,32}$/.test(name) || names.indexOf(name) !== index);
  if (bad !== undefined) {
    throw new ConfigError(
      `OIDC_PROVIDERS must list distinct names of 1 to 32 lower-case letters, digits and hyphens, got ` +
        `${JSON.stringify(bad.slice(0, 40))}`,
    );
  }
  if (!isWebUrl(tokenIssuer)) {
    throw new ConfigError(
      'OIDC_PROVIDERS needs TOKEN_ISSUER to be the service\'s public https URL (such as ' +
        'https://accounts.example.com): the providers send browsers back to TOKEN_ISSUER/auth/oidc/<name>/callback',
    );
  }
  const providers = names.map((name) => {
    const prefix = `OIDC_${name.toUpperCase().replaceAll('-', '_')}_`;
    const issuer = env[`${prefix}ISSUER`] ?? '';
    if (!isWebUrl(issuer) || /[?#]/.test(issuer)) {
      throw new ConfigError(
        `${prefix}ISSUER must be the provider's issuer URL, https (http only on a loopback host), without a query ` +
          `or fragment, got ${JSON.stringify(issuer.slice(0, 200))}`,
      );
    }
    const clientId = env[`${prefix}CLIENT_ID`] ?? '';
    if (!/^[\x21-\x7e]{1,200}$/.test(clientId)) {
      throw new ConfigError(`${prefix}CLIENT_ID must be 1 to 200 printable characters without spaces`);
    }
    const clientSecret = env[`${prefix}CLIENT_SECRET`] ?? '';
    // A secret: said what is wrong, never what it is.
    if (!/^[\x20-\x7e]{1,512}$/.test(clientSecret)) {
      throw new ConfigError(`${prefix}CLIENT_SECRET must be 1 to 512 printable characters`);
    }
    const trust = env[`${prefix}TRUST_EMAIL`] ?? 'false';
    if (trust !== 'true' && trust !== 'false') throw new ConfigError(`${prefix}TRUST_EMAIL must be true or false`);
    return { name, issuer, clientId, clientSecret, trustEmail: trust === 'true' };
  });
  const redirectUris = (env.OIDC_REDIRECT_URIS ?? '').split(',').map((uri) => uri.trim()).filter(Boolean);
  const badUri = redirectUris.find((uri) => !isWebUrl(uri) || uri.includes('#'));
  if (redirectUris.length === 0 || badUri !== undefined) {
    const got = badUri === undefined ? '' : `, got ${JSON.stringify(badUri.slice(0, 200))}`;
    throw new ConfigError(
      'OIDC_REDIRECT_URIS must list the applications\' own addresses for the end of a sign-in, comma-separated, ' +
        `https (http only on a loopback host), without a fragment${got}`,
    );
  }
  return { providers, redirectUris, base: tokenIssuer.replace(/\/+$/, '') };
}

/** An https URL, or an http one whose host is loopback. */
function isWebUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
  return url.username === '' && (url.protocol === 'https:' || (url.protocol === 'http:' && loopback));
}
