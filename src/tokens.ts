import { createHmac, timingSafeEqual } from 'node:crypto';

/** Claims of an access token; `ver` is the account's credential version when it was issued. */
export type TokenClaims = { sub: string; ver: number; iat: number; exp: number };

export type TokenService = {
  issueToken(accountId: string, credentialVersion: number, now: Date): { token: string; expiresIn: number };
  /** The claims of a well-formed, correctly signed, unexpired token, else null. */
  verifyToken(token: string, now: Date): TokenClaims | null;
};

const header = encodeJson({ alg: 'HS256', typ: 'JWT' });
const segment = /^[A-Za-z0-9_-]+$/;

/** JWT (RFC 7519) signed with HMAC-SHA256. The first secret signs; every secret verifies, for rotation. */
export function createTokenService(secrets: Buffer[], ttlSeconds: number): TokenService {
  const [signingSecret] = secrets;
  if (signingSecret === undefined) throw new Error('at least one token secret is required');
  return {
    issueToken(accountId, credentialVersion, now) {
      const iat = Math.floor(now.getTime() / 1000);
      const payload = encodeJson({ sub: accountId, ver: credentialVersion, iat, exp: iat + ttlSeconds });
      return { token: `${header}.${payload}.${sign(signingSecret, `${header}.${payload}`)}`, expiresIn: ttlSeconds };
    },
    verifyToken(token, now) {
      const parts = token.split('.');
      if (parts.length !== 3 || !parts.every((part) => segment.test(part))) return null;
      const [encodedHeader, encodedPayload, signature] = parts as [string, string, string];
      // Only HS256 is accepted: `none`, asymmetric algorithms and extra header fields are refused
      // so an attacker cannot choose how the token is checked.
      if (!isAcceptedHeader(decodeJson(encodedHeader))) return null;
      const signed = `${encodedHeader}.${encodedPayload}`;
      if (!secrets.some((secret) => equalInConstantTime(sign(secret, signed), signature))) return null;
      const claims = decodeJson(encodedPayload);
      if (!isClaims(claims)) return null;
      return claims.exp > Math.floor(now.getTime() / 1000) ? claims : null;
    },
  };
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

function isAcceptedHeader(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const fields = value as Record<string, unknown>;
  const keys = Object.keys(fields);
  return fields.alg === 'HS256' && keys.every((key) => key === 'alg' || (key === 'typ' && fields.typ === 'JWT'));
}

function isClaims(value: unknown): value is TokenClaims {
  if (typeof value !== 'object' || value === null) return false;
  const claims = value as Record<string, unknown>;
  return typeof claims.sub === 'string' && Number.isSafeInteger(claims.ver) && Number.isSafeInteger(claims.iat) && Number.isSafeInteger(claims.exp);
}
