import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { isUuid } from '../validation.ts';

/** Claims of an access token. `sub` is the account's public id, `sid` its session. */
export type TokenClaims = { iss: string; aud?: string; sub: string; sid: string; jti: string; iat: number; exp: number };

export type TokenService = {
  /** `accountPublicId` becomes `sub`: the public id, never the row id. */
  issueToken(accountPublicId: string, sessionId: string, now: Date): { token: string; expiresIn: number };
  /** The claims of a well-formed, correctly signed, current token for this issuer and audience, else null. */
  verifyToken(token: string, now: Date): TokenClaims | null;
};

export type TokenOptions = { secrets: Buffer[]; ttlSeconds: number; issuer: string; audience: string | null };

/** The one header accepted, byte for byte: HS256 only, so an attacker cannot choose how a token is checked. */
const header = encodeJson({ alg: 'HS256', typ: 'JWT' });
const segment = /^[A-Za-z0-9_-]+$/;
/** Tolerated clock difference between instances for `iat`. */
const clockSkewSeconds = 5;
/** Verified tokens remembered (about half a KiB each). */
const maxVerified = 1_000;

/**
 * JWT (RFC 7519) signed with HMAC-SHA256. The first secret signs; every secret verifies, for
 * rotation. A pure signer and verifier: whether the session still lives is sessions.ts's part.
 */
export function createTokenService({ secrets, ttlSeconds, issuer, audience }: TokenOptions): TokenService {
  const [signingSecret] = secrets;
  if (signingSecret === undefined) throw new Error('at least one token secret is required');
  // Tokens that passed the checks of checkSignedClaims, with their claims. A client presents the
  // same token on every request until it expires, and checking one (an HMAC, two JSON passes,
  // base64 both ways) cost more than the rest of GET /acc/me's own work. Only tokens that passed
  // get in, so nobody can plant one; oldest out first past maxVerified.
  const verified = new Map<string, Readonly<TokenClaims>>();
  return {
    issueToken(accountPublicId, sessionId, now) {
      const iat = Math.floor(now.getTime() / 1000);
      const claims: TokenClaims = { iss: issuer, ...(audience === null ? {} : { aud: audience }), sub: accountPublicId, sid: sessionId, jti: randomUUID(), iat, exp: iat + ttlSeconds };
      const payload = encodeJson(claims);
      return { token: `${header}.${payload}.${sign(signingSecret, `${header}.${payload}`)}`, expiresIn: ttlSeconds };
    },
    verifyToken(token, now) {
      let claims = verified.get(token);
      if (claims === undefined) {
        const checked = checkSignedClaims(token);
        if (checked === null) return null;
        if (verified.size >= maxVerified) verified.delete(verified.keys().next().value!);
        verified.set(token, (claims = Object.freeze(checked)));
      }
      // The clock is checked on every use, cached or not.
      const nowSeconds = Math.floor(now.getTime() / 1000);
      if (claims.iat > nowSeconds + clockSkewSeconds || claims.exp <= nowSeconds) return null;
      return claims;
    },
  };

  /** The claims of a well-formed token signed with one of the secrets, for this issuer and audience, in the form this service writes; else null. */
  function checkSignedClaims(token: string): TokenClaims | null {
    const parts = token.split('.');
    if (parts.length !== 3 || !parts.every((part) => segment.test(part))) return null;
    const [encodedHeader, encodedPayload, signature] = parts as [string, string, string];
    if (encodedHeader !== header) return null;
    const signed = `${encodedHeader}.${encodedPayload}`;
    if (!secrets.some((secret) => equalInConstantTime(sign(secret, signed), signature))) return null;
    const claims = decodeJson(encodedPayload);
    if (!isClaims(claims) || claims.iss !== issuer || claims.aud !== (audience ?? undefined)) return null;
    // Only the canonical form this service writes: no extra, reordered or re-encoded claims.
    if (encodeJson({ iss: claims.iss, ...(claims.aud === undefined ? {} : { aud: claims.aud }), sub: claims.sub, sid: claims.sid, jti: claims.jti, iat: claims.iat, exp: claims.exp }) !== encodedPayload) return null;
    return claims;
  }
}

function sign(secret: Buffer, data: string): string {
  return createHmac('sha256', secret).update(data).digest('base64url');
}

/** Constant-time comparison, so the time taken does not reveal how much of a forged signature is right. */
function equalInConstantTime(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function decodeJson(encoded: string): unknown {
  try {
    return JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

function isClaims(value: unknown): value is TokenClaims {
  if (typeof value !== 'object' || value === null) return false;
  const claims = value as Record<string, unknown>;
  return (
    typeof claims.iss === 'string' &&
    (claims.aud === undefined || typeof claims.aud === 'string') &&
    typeof claims.sub === 'string' &&
    isUuid(claims.sub) &&
    typeof claims.sid === 'string' &&
    isUuid(claims.sid) &&
    typeof claims.jti === 'string' &&
    Number.isSafeInteger(claims.iat) &&
    Number.isSafeInteger(claims.exp)
  );
}
