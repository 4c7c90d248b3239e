import { createHmac, createSecretKey, randomUUID, sign, verify, type KeyObject } from 'node:crypto';
import { equalSecrets } from './constant-time.ts';
import { isUuid } from '../http/validate.ts';

/** Claims of an access token. `sub` is the account's public id, `sid` its session. */
export type TokenClaims = {
  iss: string; aud?: string; sub: string; sid: string; jti: string; iat: number; exp: number;
};

/** The claims in the one order this service writes them, with `aud` only where there is one. */
const inOrder = ({ iss, aud, sub, sid, jti, iat, exp }: TokenClaims): TokenClaims =>
  ({ iss, ...(aud === undefined ? {} : { aud }), sub, sid, jti, iat, exp });

export type TokenService = {
  /** `accountPublicId` becomes `sub`: the public id, never the row id. */
  issueToken(accountPublicId: string, sessionId: string, now: Date): { token: string; expiresIn: number };
  /** The claims of a well-formed, correctly signed, current token for this issuer and audience, else null. */
  verifyToken(token: string, now: Date): TokenClaims | null;
};

/**
 * How tokens are signed and checked. Each key has one header, written by this service and
 * compared byte for byte, so that a token cannot choose its algorithm or key.
 */
export type TokenKeys = {
  /** The header and signature of a new token, under the current key. */
  signer(): { header: string; sign(signingInput: string): string };
  /** Whether `signature` is right for `signingInput` under the key whose header is `header`. */
  verify(header: string, signingInput: string, signature: string): boolean;
};

export type TokenOptions = { keys: TokenKeys; ttlSeconds: number; issuer: string; audience: string | null };

const segment = /^[A-Za-z0-9_-]+$/;
/** Tolerated clock difference between instances for `iat`. */
const clockSkewSeconds = 5;

/** JWT (RFC 7519). A pure signer and verifier: whether the session still lives is sessions.ts's part. */
export function createTokenService({ keys, ttlSeconds, issuer, audience }: TokenOptions): TokenService {
  return {
    issueToken(accountPublicId, sessionId, now) {
      const iat = Math.floor(now.getTime() / 1000);
      const [aud, jti, exp] = [audience ?? undefined, randomUUID(), iat + ttlSeconds];
      const claims = inOrder({ iss: issuer, aud, sub: accountPublicId, sid: sessionId, jti, iat, exp });
      const signer = keys.signer();
      const signingInput = `${signer.header}.${encodeJson(claims)}`;
      return { token: `${signingInput}.${signer.sign(signingInput)}`, expiresIn: ttlSeconds };
    },
    verifyToken(token, now) {
      const parts = token.split('.');
      if (parts.length !== 3 || !parts.every((part) => segment.test(part))) return null;
      const [header, payload, signature] = parts as [string, string, string];
      if (!keys.verify(header, `${header}.${payload}`, signature)) return null;
      const claims = decodeJson(payload);
      if (!isClaims(claims) || claims.iss !== issuer || claims.aud !== (audience ?? undefined)) return null;
      // Only the canonical form this service writes: no extra, reordered or re-encoded claims.
      if (encodeJson(inOrder(claims)) !== payload) return null;
      const nowSeconds = Math.floor(now.getTime() / 1000);
      if (claims.iat > nowSeconds + clockSkewSeconds || claims.exp <= nowSeconds) return null;
      return claims;
    },
  };
}

/** HS256 under TOKEN_SECRET: the first secret signs, every one verifies. Whoever verifies can also sign. */
export function hmacTokenKeys(secrets: readonly Buffer[]): TokenKeys {
  // As key objects: given bytes, node:crypto would build one for every signature.
  const keys = secrets.map((secret) => createSecretKey(secret));
  const [current] = keys;
  if (current === undefined) throw new Error('at least one token secret is required');
  const header = encodeJson({ alg: 'HS256', typ: 'JWT' });
  const mac = (secret: KeyObject, data: string) => createHmac('sha256', secret).update(data).digest('base64url');
  return {
    signer: () => ({ header, sign: (data) => mac(current, data) }),
    // Every secret is tried, each in constant time and with no early exit, so the time taken tells nothing
    // of a forged signature, nor which secret signed.
    verify: (given, data, signature) =>
      given === header && keys.map((secret) => equalSecrets(mac(secret, data), signature)).includes(true),
  };
}

/** An ES256 key pair with its key id; the private key is absent where the key only verifies. */
export type SigningKey = { kid: string; publicKey: KeyObject; privateKey: KeyObject | null };

/**
 * ES256 (ECDSA P-256, SHA-256) under the signing keys of `current()`: the first signs, every one
 * verifies. Resource servers verify with the public keys alone (the JWKS).
 */
export function ecTokenKeys(current: () => readonly SigningKey[]): TokenKeys {
  const header = (kid: string) => encodeJson({ alg: 'ES256', typ: 'JWT', kid });
  return {
    signer() {
      const key = current()[0];
      if (key?.privateKey === undefined || key.privateKey === null) throw new Error('no signing key');
      const privateKey = key.privateKey;
      const signWith = (data: string) =>
        sign('sha256', Buffer.from(data), { key: privateKey, dsaEncoding: 'ieee-p1363' });
      return { header: header(key.kid), sign: (data) => lowS(signWith(data)).toString('base64url') };
    },
    verify(given, data, signature) {
      const key = current().find((candidate) => header(candidate.kid) === given);
      const bytes = Buffer.from(signature, 'base64url');
      // Only the canonical encoding of a 64-byte signature (r and s, 32 bytes each), with a low
      // s: (r, n - s) verifies as well, and a token must have one form only.
      if (key === undefined || bytes.length !== 64 || bytes.toString('base64url') !== signature) return false;
      if (BigInt(`0x${bytes.subarray(32).toString('hex')}`) > halfOrder) return false;
      return verify('sha256', Buffer.from(data), { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, bytes);
    },
  };
}

/** The order n of P-256, and n / 2: ECDSA's s and n - s both verify; only s <= n / 2 is accepted. */
const curveOrder = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const halfOrder = curveOrder / 2n;

/** The signature with s replaced by n - s when s is high, so that every token this service makes is accepted. */
function lowS(signature: Buffer): Buffer {
  const s = BigInt(`0x${signature.subarray(32).toString('hex')}`);
  if (s <= halfOrder) return signature;
  const lowered = Buffer.from((curveOrder - s).toString(16).padStart(64, '0'), 'hex');
  return Buffer.concat([signature.subarray(0, 32), lowered]);
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
