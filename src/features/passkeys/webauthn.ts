import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { equalSecrets } from '../../core/constant-time.ts';
import { decodeCbor, readCbor } from './cbor.ts';

/**
 * The WebAuthn checks (Level 3, §7.1 registration and §7.2 authentication) with node:crypto
 * alone. Pure: no storage, no clock. Every refusal names its step, for tests and logs; the
 * token endpoint answers all of them alike.
 */
export type RelyingParty = { id: string; name: string; origins: readonly string[] };

/** COSE algorithms that are verified here, in the order offered to the browser: EdDSA, ES256, RS256. */
export const coseAlgorithms = [-8, -7, -257] as const;

export type Refusal =
  | 'malformed' | 'type' | 'challenge' | 'origin' | 'cross-origin' | 'rp-id' | 'user-presence' | 'user-verification'
  | 'attestation' | 'algorithm' | 'credential-id' | 'backup-state' | 'signature' | 'user-handle' | 'counter';

/** A credential as registration makes it, to be stored. */
export type NewCredential = {
  credentialId: Buffer; publicKey: Buffer; algorithm: number; signCount: number;
  backupEligible: boolean; backedUp: boolean; aaguid: string; transports: string[];
};
/** What an assertion is checked against: the stored credential and its owner's user handle. */
export type StoredCredential = { publicKey: Buffer; signCount: number; backupEligible: boolean; userHandle: Buffer };

const flag = {
  userPresent: 0x01, userVerified: 0x04, backupEligible: 0x08, backedUp: 0x10, attested: 0x40, extensions: 0x80,
};
const maxCredentialIdBytes = 1023;

export type AuthenticatorData = {
  rpIdHash: Buffer; flags: number; signCount: number;
  credential: { aaguid: Buffer; id: Buffer; publicKey: Buffer } | null;
};

/**
 * §6.1: rpIdHash, flags, counter, then the attested credential and extensions as the flags
 * announce them; nothing after.
 */
export function parseAuthenticatorData(data: Buffer): AuthenticatorData | null {
  if (data.length < 37) return null;
  const flags = data[32]!;
  let at = 37;
  let credential: AuthenticatorData['credential'] = null;
  if ((flags & flag.attested) !== 0) {
    if (data.length < at + 18) return null;
    const idLength = data.readUInt16BE(at + 16);
    if (idLength < 1 || idLength > maxCredentialIdBytes) return null;
    const key = readCbor(data, at + 18 + idLength);
    if (key === null) return null;
    const id = data.subarray(at + 18, at + 18 + idLength);
    credential = { aaguid: data.subarray(at, at + 16), id, publicKey: data.subarray(at + 18 + idLength, key.end) };
    at = key.end;
  }
  if ((flags & flag.extensions) !== 0) {
    const extensions = readCbor(data, at);
    if (extensions === null || !(extensions.value instanceof Map)) return null;
    at = extensions.end;
  }
  if (at !== data.length) return null;
  return { rpIdHash: data.subarray(0, 32), flags, signCount: data.readUInt32BE(33), credential };
}

/** The labels of a public COSE key by key type (RFC 9053, RFC 8230): kty, alg, then the public parameters. */
const publicLabels = new Map<number, readonly number[]>([
  [1, [1, 3, -1, -2]], // OKP: crv, x
  [2, [1, 3, -1, -2, -3]], // EC2: crv, x, y
  [3, [1, 3, -1, -2]], // RSA: n, e
]);

/** A COSE_Key (RFC 9053) of one of coseAlgorithms, with the key type and curve it needs; anything else null. */
export function publicKeyFromCose(cose: Buffer): { key: KeyObject; algorithm: number } | null {
  const map = decodeCbor(cose);
  if (!(map instanceof Map)) return null;
  const [kty, alg, crv, x, y] = [map.get(1), map.get(3), map.get(-1), map.get(-2), map.get(-3)];
  // Only the public labels of the key's type: a private part (EC2 and OKP's d at -4, RSA's d at -3 and its
  // primes from -4 on) or a label that no check here reads has no place in a stored public key.
  const allowed = publicLabels.get(kty as number);
  if (allowed === undefined || [...map.keys()].some((label) => !allowed.includes(label as number))) return null;
  const jwk = (fields: Record<string, string>) => createPublicKey({ key: fields, format: 'jwk' });
  const b64 = (bytes: Buffer) => bytes.toString('base64url');
  try {
    if (alg === -7 && kty === 2 && crv === 1 && isBytes(x, 32) && isBytes(y, 32)) {
      return { key: jwk({ kty: 'EC', crv: 'P-256', x: b64(x), y: b64(y) }), algorithm: alg };
    }
    if (alg === -8 && kty === 1 && crv === 6 && isBytes(x, 32)) {
      return { key: jwk({ kty: 'OKP', crv: 'Ed25519', x: b64(x) }), algorithm: alg };
    }
    // RS256: n is -1 and e is -2 (RFC 8230); 2048 to 4096 bits (under 2048 NIST refuses; over
    // 4096 no authenticator makes, and verifying would cost more than the decoy an unknown
    // credential is checked against), and an odd e of at least 3: e = 1 makes every padded
    // hash its own signature.
    if (alg === -257 && kty === 3 && Buffer.isBuffer(crv) && Buffer.isBuffer(x) && x.length <= 8) {
      const e = BigInt(`0x${x.toString('hex') || '0'}`);
      if (e < 3n || e % 2n === 0n || crv.at(-1)! % 2 === 0) return null;
      const key = jwk({ kty: 'RSA', n: b64(crv), e: b64(x) });
      const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
      return bits >= 2048 && bits <= 4096 ? { key, algorithm: alg } : null;
    }
  } catch {
    // Not a point on the curve, or a key OpenSSL refuses.
  }
  return null;
}

/**
 * §7.2 step 21: the signature over authenticatorData ‖ SHA-256(clientDataJSON). ES256
 * signatures are DER, as WebAuthn sends them.
 */
export function verifySignature(
  publicKey: { key: KeyObject; algorithm: number },
  authenticatorData: Buffer,
  clientDataJSON: Buffer,
  signature: Buffer,
): boolean {
  const signed = Buffer.concat([authenticatorData, sha256(clientDataJSON)]);
  try {
    return verify(publicKey.algorithm === -8 ? null : 'sha256', signed, publicKey.key, signature);
  } catch {
    return false;
  }
}

/**
 * §7.1: a RegistrationResponseJSON against the challenge issued for it. Attestation must be
 * `none` (what the options ask for): nothing about the authenticator is trusted, so nothing
 * an attestation statement says is stored as if it were verified.
 */
export function verifyRegistration(
  rp: RelyingParty, challenge: Buffer, response: unknown,
): { outcome: 'verified'; credential: NewCredential } | { outcome: 'refused'; reason: Refusal } {
  const parsed = readResponse(response, ['clientDataJSON', 'attestationObject']);
  if (parsed === null) return refused('malformed');
  const refusal = checkClientData(rp, parsed.fields.clientDataJSON!, 'webauthn.create', challenge);
  if (refusal !== null) return refused(refusal);
  const attestation = decodeCbor(parsed.fields.attestationObject!);
  if (!(attestation instanceof Map) || attestation.size !== 3) return refused('malformed');
  if (!Buffer.isBuffer(attestation.get('authData'))) return refused('malformed');
  const statement = attestation.get('attStmt');
  const noStatement = statement instanceof Map && statement.size === 0;
  if (attestation.get('fmt') !== 'none' || !noStatement) return refused('attestation');
  const data = parseAuthenticatorData(attestation.get('authData') as Buffer);
  if (data === null || data.credential === null) return refused('malformed');
  const flagRefusal = checkAuthenticatorData(rp, data);
  if (flagRefusal !== null) return refused(flagRefusal);
  if (!data.credential.id.equals(parsed.id)) return refused('credential-id');
  const key = publicKeyFromCose(data.credential.publicKey);
  if (key === null) return refused('algorithm');
  const hex = data.credential.aaguid.toString('hex');
  const aaguid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return {
    outcome: 'verified',
    credential: {
      credentialId: Buffer.from(parsed.id), publicKey: Buffer.from(data.credential.publicKey),
      algorithm: key.algorithm, signCount: data.signCount, aaguid, transports: parsed.transports,
      backupEligible: (data.flags & flag.backupEligible) !== 0, backedUp: (data.flags & flag.backedUp) !== 0,
    },
  };
}

export type Assertion = { credentialId: Buffer; userHandle: Buffer | null; fields: Record<string, Buffer> };

/** The credential id and user handle of an AuthenticationResponseJSON, to look it up by; null if malformed. */
export function readAssertion(response: unknown): Assertion | null {
  const parsed = readResponse(response, ['clientDataJSON', 'authenticatorData', 'signature']);
  if (parsed === null) return null;
  const handle = (response as { response: { userHandle?: unknown } }).response.userHandle;
  const userHandle = typeof handle === 'string' ? decodeBase64Url(handle) : null;
  return { credentialId: parsed.id, userHandle, fields: parsed.fields };
}

/**
 * §7.2 for a discoverable credential: the user handle is required and must be its owner's.
 * The sign-count policy: two zeros pass (synced passkeys and some managers never count);
 * otherwise the counter must grow, and a counter that does not is a clone signal ('counter').
 * The BE flag of a credential never changes; BS may.
 */
export function verifyAssertion(
  rp: RelyingParty, challenge: Buffer, assertion: Assertion, stored: StoredCredential,
): { outcome: 'verified'; signCount: number; backedUp: boolean } | { outcome: 'refused'; reason: Refusal } {
  const { clientDataJSON, authenticatorData, signature } = assertion.fields as Record<string, Buffer>;
  const refusal = checkClientData(rp, clientDataJSON!, 'webauthn.get', challenge);
  if (refusal !== null) return refused(refusal);
  const data = parseAuthenticatorData(authenticatorData!);
  if (data === null || data.credential !== null) return refused('malformed');
  const flagRefusal = checkAuthenticatorData(rp, data);
  if (flagRefusal !== null) return refused(flagRefusal);
  const key = publicKeyFromCose(stored.publicKey);
  if (key === null || !verifySignature(key, authenticatorData!, clientDataJSON!, signature!)) {
    return refused('signature');
  }
  // After the signature, like every check that reads the stored credential: an unknown one costs the same.
  if (((data.flags & flag.backupEligible) !== 0) !== stored.backupEligible) return refused('backup-state');
  const handle = assertion.userHandle;
  if (handle === null || !equalSecrets(handle, stored.userHandle)) return refused('user-handle');
  if (!counterAdvances(stored.signCount, data.signCount)) return refused('counter');
  return { outcome: 'verified', signCount: data.signCount, backedUp: (data.flags & flag.backedUp) !== 0 };
}

export function counterAdvances(stored: number, received: number): boolean {
  return (stored === 0 && received === 0) || received > stored;
}

/** §7.1 steps 7–12 and §7.2 steps 10–15: type, challenge and origin exactly; never a cross-origin iframe. */
function checkClientData(rp: RelyingParty, raw: Buffer, type: string, challenge: Buffer): Refusal | null {
  let data: { type?: unknown; challenge?: unknown; origin?: unknown; crossOrigin?: unknown; topOrigin?: unknown };
  try {
    data = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    return 'malformed';
  }
  if (typeof data !== 'object' || data === null) return 'malformed';
  if (data.type !== type) return 'type';
  const sent = typeof data.challenge === 'string' ? decodeBase64Url(data.challenge) : null;
  if (sent === null || !equalSecrets(sent, challenge)) return 'challenge';
  // One of the configured origins: never the request's Origin or Host, which a proxy or an attacker sets.
  if (typeof data.origin !== 'string' || !rp.origins.includes(data.origin)) return 'origin';
  const crossOrigin = data.crossOrigin !== undefined && data.crossOrigin !== false;
  if (crossOrigin || data.topOrigin !== undefined) return 'cross-origin';
  return null;
}

/** The RP ID hash, user presence and user verification, which is required; BS without BE is no valid state. */
function checkAuthenticatorData(rp: RelyingParty, data: AuthenticatorData): Refusal | null {
  if (!equalSecrets(data.rpIdHash, sha256(Buffer.from(rp.id)))) return 'rp-id';
  if ((data.flags & flag.userPresent) === 0) return 'user-presence';
  if ((data.flags & flag.userVerified) === 0) return 'user-verification';
  if ((data.flags & flag.backedUp) !== 0 && (data.flags & flag.backupEligible) === 0) return 'backup-state';
  return null;
}

type ParsedResponse = { id: Buffer; fields: Record<string, Buffer>; transports: string[] };

/** The shape of both JSON responses: `id` equal to `rawId`, type public-key, and the named base64url fields. */
function readResponse(value: unknown, names: string[]): ParsedResponse | null {
  if (!isObject(value) || value.type !== 'public-key' || !isObject(value.response)) return null;
  if (typeof value.id !== 'string' || value.rawId !== value.id) return null;
  const id = decodeBase64Url(value.id);
  if (id === null || id.length === 0 || id.length > maxCredentialIdBytes) return null;
  const fields: Record<string, Buffer> = {};
  for (const name of names) {
    const field = value.response[name];
    const bytes = typeof field === 'string' ? decodeBase64Url(field) : null;
    if (bytes === null) return null;
    fields[name] = bytes;
  }
  const transports = value.response.transports ?? [];
  const isTransport = (t: unknown) => typeof t === 'string' && /^[a-z-]{1,16}$/.test(t);
  if (!Array.isArray(transports) || transports.length > 8 || !transports.every(isTransport)) return null;
  return { id, fields, transports: transports as string[] };
}

/** Strict base64url without padding: a value that does not round-trip is refused, not repaired. */
export function decodeBase64Url(text: string): Buffer | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}

const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();
const isBytes = (value: unknown, length: number): value is Buffer => Buffer.isBuffer(value) && value.length === length;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const refused = (reason: Refusal) => ({ outcome: 'refused', reason }) as const;
