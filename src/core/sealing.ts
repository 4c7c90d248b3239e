import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Authenticated encryption (AES-256-GCM) for data at rest that must be readable later: TOTP
 * secrets, queued mail, the keys of the keyed hashes and the token signing keys. Under
 * ENCRYPTION_KEYS only, which sign nothing (docs/security.md, "Keys").
 *
 * A sealed value is `version (1) | key id length (1) | key id | IV (12) | tag (16) | ciphertext`.
 * Its associated data is that header, the purpose and the row it belongs to, so a value moved to
 * another row, table or purpose does not open. The first key seals; every key opens, and `open`
 * says whether the value needs sealing again under the first (the re-seal, docs/operations.md).
 */
export type Sealer = {
  seal(plaintext: Buffer, purpose: SealPurpose, row: string): Buffer;
  /** Null if the value is malformed, its key is not configured, or it was sealed for another purpose or row. */
  open(sealed: Buffer, purpose: SealPurpose, row: string): Opened | null;
};

export type Opened = {
  plaintext: Buffer;
  /** False: sealed under a key other than the first; seal it again. */
  current: boolean;
};

/** What a sealed value is; part of its associated data. */
export type SealPurpose = 'totp-secret' | 'mail' | 'keyed-hash-key' | 'signing-key' | 'passkey-challenge' | 'oidc';

export type EncryptionKey = { id: string; key: Buffer };

const sealVersion = 2;
const ivBytes = 12;
/** Exactly 16: GCM would otherwise accept a truncated tag, which is easier to forge. */
const tagBytes = 16;

export function createSealer(keys: readonly EncryptionKey[]): Sealer {
  const [current] = keys;
  if (current === undefined) throw new Error('at least one encryption key is required');
  const byId = new Map(keys.map((entry) => [entry.id, entry.key]));
  return {
    seal(plaintext, purpose, row) {
      const header = Buffer.concat([Buffer.from([sealVersion, current.id.length]), Buffer.from(current.id, 'ascii')]);
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv, { authTagLength: tagBytes });
      cipher.setAAD(associatedData(header, purpose, row));
      const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([header, iv, cipher.getAuthTag(), ciphertext]);
    },
    open(sealed, purpose, row) {
      if (sealed.length < 2 || sealed[0] !== sealVersion) return null;
      const headerBytes = 2 + sealed[1]!;
      if (sealed.length < headerBytes + ivBytes + tagBytes) return null;
      const id = sealed.subarray(2, headerBytes).toString('ascii');
      const key = byId.get(id);
      if (key === undefined) return null;
      const iv = sealed.subarray(headerBytes, headerBytes + ivBytes);
      const tag = sealed.subarray(headerBytes + ivBytes, headerBytes + ivBytes + tagBytes);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: tagBytes });
        decipher.setAAD(associatedData(sealed.subarray(0, headerBytes), purpose, row));
        decipher.setAuthTag(tag);
        const ciphertext = sealed.subarray(headerBytes + ivBytes + tagBytes);
        const plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
        return { plaintext, current: id === current.id };
      } catch {
        return null;
      }
    },
  };
}

/** The id of the key that sealed a value, or null if it is not a value of this version. */
export function sealedKeyId(sealed: Buffer): string | null {
  if (sealed.length < 2 || sealed[0] !== sealVersion || sealed.length < 2 + sealed[1]!) return null;
  return sealed.subarray(2, 2 + sealed[1]!).toString('ascii');
}

function associatedData(header: Buffer, purpose: SealPurpose, row: string): Buffer {
  return Buffer.concat([header, Buffer.from(`\0${purpose}\0${row}`, 'utf8')]);
}
