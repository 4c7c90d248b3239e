import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** Authenticated encryption for data at rest that must be readable later, such as queued e-mail. */
export type Sealer = { seal(plaintext: string): Buffer; open(sealed: Buffer): string | null };

const ivBytes = 12;
const tagBytes = 16;

/**
 * AES-256-GCM under keys derived from the token secrets with HKDF, so that no extra key has
 * to be configured. The first secret seals; every secret is tried to open, as with tokens.
 */
export function createSealer(secrets: Buffer[]): Sealer {
  const keys = secrets.map((secret) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'account-service outbox v1', 32)));
  const [sealingKey] = keys;
  if (sealingKey === undefined) throw new Error('at least one secret is required');
  return {
    seal(plaintext) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', sealingKey, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
    },
    open(sealed) {
      const iv = sealed.subarray(0, ivBytes);
      const tag = sealed.subarray(ivBytes, ivBytes + tagBytes);
      const ciphertext = sealed.subarray(ivBytes + tagBytes);
      for (const key of keys) {
        try {
          const decipher = createDecipheriv('aes-256-gcm', key, iv);
          decipher.setAuthTag(tag);
          return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
        } catch {
          // Wrong key or tampered data; try the next key.
        }
      }
      return null;
    },
  };
}
