import { createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { equalSecrets } from '../../core/constant-time.ts';
import { HttpError, problems } from '../../http/errors.ts';
import { readAtMost } from '../../support/bounded-body.ts';
import type { Logger } from '../../telemetry/log.ts';
import type { OidcProvider, OidcSettings } from './settings.ts';

/** What discovery (OpenID Connect Discovery 1.0, §4) says of a provider, as this service uses it. */
export type Metadata = {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
  /** RFC 9207: the provider sends `iss` with every authorization response, which is then required. */
  sendsIss: boolean;
  /** client_secret_basic unless the provider offers only client_secret_post. */
  secretInBody: boolean;
};

/** The providers, their metadata read once (at start-up, or on the first request that needs it), and their keys. */
export type Providers = {
  settings: OidcSettings;
  find(name: string): OidcProvider | undefined;
  metadata(provider: OidcProvider): Promise<Metadata>;
  /** The provider's verification keys for `kid`, the JWKS read again at most once a minute when none matches. */
  keys(provider: OidcProvider, kid: string | undefined): Promise<PublicJwk[]>;
};

export type PublicJwk = JsonWebKey & { kid?: string; alg?: string; use?: string };

/**
 * A provider that cannot be reached or answers what it must not: 502 to the caller, who learns no
 * more (the issuers and errors are the operator's business); `reason` goes to the log.
 */
export class ProviderFailure extends HttpError {
  readonly reason: string;

  constructor(reason: string) {
    super(problems.providerUnavailable, { detail: 'The OpenID provider could not be used; the log says why.' });
    this.reason = reason;
  }
}
const unavailable = (reason: string) => new ProviderFailure(reason);

const fetchTimeoutMs = 5_000;
const maxDocumentBytes = 256 * 1024;
const jwksRefreshSpacingMs = 60_000;

export function createProviders(settings: OidcSettings, log: Logger): Providers {
  const metadata = new Map<string, Metadata>();
  const jwks = new Map<string, { keys: PublicJwk[]; readAt: number }>();
  const providers: Providers = {
    settings,
    find: (name) => settings.providers.find((provider) => provider.name === name),
    async metadata(provider) {
      const known = metadata.get(provider.name) ?? (await discover(provider).catch((error: unknown) => {
        if (error instanceof ProviderFailure) log.warn('OpenID provider discovery failed', { reason: error.reason });
        throw error;
      }));
      metadata.set(provider.name, known);
      return known;
    },
    async keys(provider, kid) {
      const matching = (keys: PublicJwk[]) => keys.filter((key) => kid === undefined || key.kid === kid);
      const held = jwks.get(provider.name);
      if (held !== undefined && (matching(held.keys).length > 0 || Date.now() - held.readAt < jwksRefreshSpacingMs)) {
        return matching(held.keys);
      }
      const { jwksUri } = await providers.metadata(provider);
      const document = await fetchJson(provider, jwksUri);
      const keys = Array.isArray(document.keys) ? (document.keys as PublicJwk[]) : [];
      jwks.set(provider.name, { keys, readAt: Date.now() });
      return matching(keys);
    },
  };
  // Read at start-up, in the background: a provider that is away then is asked again on its first use.
  for (const provider of settings.providers) {
    providers.metadata(provider).catch(() => {
      log.warn(`OpenID provider ${provider.name}: discovery is tried again on the first sign-in`);
    });
  }
  return providers;
}

/** Discovery, refused unless its `issuer` is the configured one exactly (OpenID Connect Discovery §4.3). */
async function discover(provider: OidcProvider): Promise<Metadata> {
  const url = `${provider.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const document = await fetchJson(provider, url);
  if (document.issuer !== provider.issuer) {
    throw unavailable(
      `OpenID provider ${provider.name}: discovery names the issuer ${JSON.stringify(document.issuer)}, ` +
        `not ${provider.issuer}`,
    );
  }
  const endpoint = (name: string) => {
    const value = document[name];
    if (typeof value === 'string' && URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)) return value;
    throw unavailable(`OpenID provider ${provider.name}: discovery has no ${name}`);
  };
  const methods = document.token_endpoint_auth_methods_supported;
  const offers = (method: string) => Array.isArray(methods) && methods.includes(method);
  return {
    authorizationEndpoint: endpoint('authorization_endpoint'),
    tokenEndpoint: endpoint('token_endpoint'),
    jwksUri: endpoint('jwks_uri'),
    sendsIss: document.authorization_response_iss_parameter_supported === true,
    secretInBody: offers('client_secret_post') && !offers('client_secret_basic'),
  };
}

async function fetchJson(
  provider: OidcProvider, url: string, init: RequestInit = {},
): Promise<Record<string, unknown>> {
  const fail = (why: string) => unavailable(`OpenID provider ${provider.name}: ${new URL(url).pathname} ${why}`);
  const signal = AbortSignal.timeout(fetchTimeoutMs);
  const response = await fetch(url, { ...init, redirect: 'error', signal }).catch((error: unknown) => {
    throw fail(`did not answer (${String(error)})`);
  });
  const body = await readAtMost(response, maxDocumentBytes).catch((error: unknown) => {
    throw fail(`did not finish its answer (${String(error)})`);
  });
  if (body === null) throw fail(`answered more than ${maxDocumentBytes / 1024} KiB`);
  const document = parseObject(body.toString('utf8'));
  if (document === null) throw fail(`answered ${response.status}, not a JSON object`);
  return document;
}

/**
 * Exchanges an authorization code at the provider's token endpoint (RFC 6749 §4.1.3, with the
 * PKCE verifier of RFC 7636) and returns the ID token. The client authenticates with its secret.
 */
export async function exchangeCode(
  providers: Providers, provider: OidcProvider, code: string, verifier: string,
): Promise<string> {
  const { tokenEndpoint, secretInBody } = await providers.metadata(provider);
  const form = new URLSearchParams({
    grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: callbackUrl(providers, provider),
  });
  const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded' };
  if (secretInBody) {
    form.set('client_id', provider.clientId);
    form.set('client_secret', provider.clientSecret);
  } else {
    // RFC 6749 §2.3.1: each part form-encoded before the two are joined.
    const pair = `${encodeURIComponent(provider.clientId)}:${encodeURIComponent(provider.clientSecret)}`;
    headers.Authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  }
  const answer = await fetchJson(provider, tokenEndpoint, { method: 'POST', headers, body: form.toString() });
  if (typeof answer.id_token !== 'string') {
    const error = typeof answer.error === 'string' ? answer.error.slice(0, 64) : 'no id_token';
    throw unavailable(`OpenID provider ${provider.name}: the token endpoint answered ${error}`);
  }
  return answer.id_token;
}

export function callbackUrl(providers: Providers, provider: OidcProvider): string {
  return `${providers.settings.base}/auth/oidc/${provider.name}/callback`;
}

/** The claims of a verified ID token that this service reads. */
export type Identity = { subject: string; email: string | null; emailVerified: boolean };

/** How far a provider's clock may be from this one, in seconds, for `exp` and `iat`. */
const skewSeconds = 120;
/** An ID token issued longer ago than this is refused, whatever its `exp`. */
const maxAgeSeconds = 600;

/** The algorithms accepted, each with the key type it needs; never `none`, never an HMAC. */
const algorithms: Record<string, (key: PublicJwk) => boolean> = {
  RS256: (key) => key.kty === 'RSA',
  ES256: (key) => key.kty === 'EC' && key.crv === 'P-256',
  EdDSA: (key) => key.kty === 'OKP' && key.crv === 'Ed25519',
};

/**
 * Verifies an ID token (OpenID Connect Core §3.1.3.7): a JWS signed by a key of the provider's
 * JWKS in RS256, ES256 or EdDSA, that key's type and (where it names one) algorithm matching;
 * `iss` the provider's exactly; `aud` holding the client id, and `azp` the client id when there
 * are several audiences; `exp` and `iat` within the skew; `nonce` the attempt's. Null for any
 * refusal; `reason` says which, for the log.
 */
export async function verifyIdToken(
  providers: Providers, provider: OidcProvider, token: string, nonce: string, now: Date,
): Promise<{ identity: Identity } | { reason: string }> {
  const parts = token.split('.');
  if (parts.length !== 3) return { reason: 'not a JWS' };
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const decode = (part: string) => parseObject(Buffer.from(part, 'base64url').toString('utf8'));
  const header = decode(headerPart);
  const claims = decode(payloadPart);
  if (header === null || claims === null) return { reason: 'not a JWS' };
  // RFC 7515 §4.1.11: an extension the verifier does not know must refuse the token; none is known here.
  if (header.crit !== undefined) return { reason: 'a crit header' };
  const alg = header.alg;
  const fits = typeof alg === 'string' && Object.hasOwn(algorithms, alg) ? algorithms[alg]! : null;
  if (fits === null) return { reason: `algorithm ${String(alg).slice(0, 16)} is not accepted` };
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  const candidates = (await providers.keys(provider, kid))
    .filter((key) => fits(key) && (key.alg ?? alg) === alg && (key.use ?? 'sig') === 'sig');
  const signed = Buffer.from(`${headerPart}.${payloadPart}`);
  const signature = Buffer.from(signaturePart, 'base64url');
  if (!candidates.some((key) => checkSignature(alg as string, key, signed, signature))) {
    return { reason: 'no key of the provider verifies the signature' };
  }
  if (claims.iss !== provider.issuer) return { reason: 'iss is not the provider' };
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(provider.clientId)) return { reason: 'aud does not hold the client id' };
  if ((audiences.length > 1 || claims.azp !== undefined) && claims.azp !== provider.clientId) {
    return { reason: 'azp is not the client id' };
  }
  const seconds = now.getTime() / 1000;
  if (typeof claims.exp !== 'number' || claims.exp < seconds - skewSeconds) return { reason: 'expired' };
  if (typeof claims.iat !== 'number' || claims.iat > seconds + skewSeconds || claims.iat < seconds - maxAgeSeconds) {
    return { reason: 'iat out of range' };
  }
  if (claims.nbf !== undefined && (typeof claims.nbf !== 'number' || claims.nbf > seconds + skewSeconds)) {
    return { reason: 'not valid yet (nbf)' };
  }
  if (typeof claims.nonce !== 'string' || !equalSecrets(claims.nonce, nonce)) return { reason: 'nonce mismatch' };
  // Printable text only: what the database keeps and the mail shows (a NUL would fail the insert).
  const printable = (value: unknown, max: number): value is string =>
    typeof value === 'string' && /^[^\p{Cc}\p{Cs}]+$/u.test(value) && value.length <= max;
  if (!printable(claims.sub, 255)) return { reason: 'no usable sub' };
  const email = printable(claims.email, 254) ? claims.email : null;
  return { identity: { subject: claims.sub, email, emailVerified: claims.email_verified === true } };
}

function checkSignature(alg: string, jwk: PublicJwk, data: Buffer, signature: Buffer): boolean {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk, format: 'jwk' });
  } catch {
    return false;
  }
  if (alg === 'EdDSA') return verify(null, data, key, signature);
  if (alg === 'ES256') return verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
  return verify('sha256', data, key, signature);
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
    return isObject ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
