import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/**
 * A WebAuthn authenticator and client written with node:crypto, for ES256, EdDSA and RS256: it
 * makes the JSON a browser would send, and each option bends one thing for a negative case.
 */
export type Algorithm = -7 | -8 | -257;
export type Bend = {
  origin?: string; type?: string; rpId?: string; flags?: number; signCount?: number; challenge?: string;
  crossOrigin?: boolean; userHandle?: string | null; fmt?: string; attestationObject?: Buffer; authenticatorData?: Buffer;
};

const up = 0x01, uv = 0x04, be = 0x08, bs = 0x10, at = 0x40;

/** A minimal CBOR encoder (what attestation objects and COSE keys use). */
export function encodeCbor(value: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 256) return Buffer.from([(major << 5) | 24, n]);
    if (n < 65536) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
    const b = Buffer.alloc(5); b[0] = (major << 5) | 26; b.writeUInt32BE(n, 1); return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)]);
  if (value instanceof Map) return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [encodeCbor(k), encodeCbor(v)])]);
  throw new Error('unsupported');
}

export type TestAuthenticator = {
  credentialId: Buffer; algorithm: Algorithm; signCount: number; userHandle: string | null; backupEligible: boolean;
  register(options: { challenge: string; user?: { id: string } }, origin: string, rpId: string, bend?: Bend): Record<string, unknown>;
  assert(options: { challenge: string }, origin: string, rpId: string, bend?: Bend): Record<string, unknown>;
};

export function createAuthenticator(algorithm: Algorithm = -7, options: { backupEligible?: boolean; counting?: boolean } = {}): TestAuthenticator {
  const { privateKey, publicKey } = keyPair(algorithm);
  const auth: TestAuthenticator = {
    credentialId: randomBytes(32), algorithm, signCount: 0, userHandle: null, backupEligible: options.backupEligible ?? true,
    register(creation, origin, rpId, bend = {}) {
      auth.userHandle = creation.user?.id ?? null;
      const clientDataJSON = clientData('webauthn.create', creation.challenge, origin, bend);
      const cose = coseKey(algorithm, publicKey);
      const credentialData = Buffer.concat([Buffer.alloc(16, 1), u16(auth.credentialId.length), auth.credentialId, cose]);
      const flags = bend.flags ?? (up | uv | at | (auth.backupEligible ? be | bs : 0));
      const authData = bend.authenticatorData ?? Buffer.concat([rpHash(bend.rpId ?? rpId), Buffer.from([flags]), u32(bend.signCount ?? 0), credentialData]);
      const attestationObject = bend.attestationObject ?? encodeCbor(new Map<string, unknown>([['fmt', bend.fmt ?? 'none'], ['attStmt', new Map()], ['authData', authData]]));
      const id = auth.credentialId.toString('base64url');
      return {
        id, rawId: id, type: 'public-key', clientExtensionResults: {}, authenticatorAttachment: 'platform',
        response: { clientDataJSON: clientDataJSON.toString('base64url'), attestationObject: attestationObject.toString('base64url'), transports: ['internal'] },
      };
    },
    assert(request, origin, rpId, bend = {}) {
      if (options.counting !== false) auth.signCount += 1;
      const clientDataJSON = clientData('webauthn.get', request.challenge, origin, bend);
      const flags = bend.flags ?? (up | uv | (auth.backupEligible ? be | bs : 0));
      const authData = bend.authenticatorData ?? Buffer.concat([rpHash(bend.rpId ?? rpId), Buffer.from([flags]), u32(bend.signCount ?? (options.counting === false ? 0 : auth.signCount))]);
      const signed = Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]);
      const signature = sign(algorithm === -8 ? null : 'sha256', signed, privateKey);
      const id = auth.credentialId.toString('base64url');
      const userHandle = bend.userHandle === undefined ? auth.userHandle : bend.userHandle;
      return {
        id, rawId: id, type: 'public-key', clientExtensionResults: {},
        response: {
          clientDataJSON: clientDataJSON.toString('base64url'), authenticatorData: authData.toString('base64url'), signature: signature.toString('base64url'),
          ...(userHandle === null ? {} : { userHandle }),
        },
      };
    },
  };
  return auth;
}

function clientData(type: string, challenge: string, origin: string, bend: Bend): Buffer {
  const data: Record<string, unknown> = { type: bend.type ?? type, challenge: bend.challenge ?? challenge, origin: bend.origin ?? origin, crossOrigin: bend.crossOrigin ?? false };
  return Buffer.from(JSON.stringify(data));
}

function keyPair(algorithm: Algorithm): { privateKey: KeyObject; publicKey: KeyObject } {
  if (algorithm === -7) return generateKeyPairSync('ec', { namedCurve: 'P-256' });
  if (algorithm === -8) return generateKeyPairSync('ed25519');
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

export function coseKey(algorithm: Algorithm, publicKey: KeyObject): Buffer {
  const jwk = publicKey.export({ format: 'jwk' });
  const b = (text: string | undefined) => Buffer.from(text!, 'base64url');
  if (algorithm === -7) return encodeCbor(new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, b(jwk.x)], [-3, b(jwk.y)]]));
  if (algorithm === -8) return encodeCbor(new Map<number, unknown>([[1, 1], [3, -8], [-1, 6], [-2, b(jwk.x)]]));
  return encodeCbor(new Map<number, unknown>([[1, 3], [3, -257], [-1, b(jwk.n)], [-2, b(jwk.e)]]));
}

const rpHash = (rpId: string) => createHash('sha256').update(rpId).digest();
const u16 = (n: number) => { const b = Buffer.alloc(2); b.writeUInt16BE(n); return b; };
const u32 = (n: number) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
