import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { Limiter } from './concurrency.ts';
import type { ScryptParams } from './config.ts';

export type PasswordHasher = {
  hash(password: string): Promise<string>;
  /**
   * True when `password` matches the stored PHC string. With `stored` null (no such account)
   * it does the same scrypt work and answers false, so that timing cannot tell the cases apart.
   */
  verify(password: string, stored: string | null): Promise<boolean>;
  /** True when the stored hash was made with other parameters than the current ones. */
  needsRehash(stored: string): boolean;
};

type ParsedHash = { params: ScryptParams; salt: Buffer; hash: Buffer };

const saltBytes = 16;
const hashBytes = 32;
const phcPattern = /^\$scrypt\$ln=([0-9]{1,2}),r=([0-9]{1,2}),p=([0-9]{1,2})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

export function createPasswordHasher(params: ScryptParams): PasswordHasher {
  return {
    async hash(password) {
      const salt = randomBytes(saltBytes);
      const hash = await derive(password, salt, params);
      return formatHash({ params, salt, hash });
    },
    async verify(password, stored) {
      const parsed = stored === null ? null : parseHash(stored);
      // A missing account is checked against a hash that matches nothing, made with the current parameters.
      const target = parsed ?? { params, salt: randomBytes(saltBytes), hash: Buffer.alloc(hashBytes) };
      const candidate = await derive(password, target.salt, target.params);
      // Constant-time comparison: a timing difference would reveal how many leading bytes match.
      const equal = candidate.length === target.hash.length && timingSafeEqual(candidate, target.hash);
      return parsed !== null && equal;
    },
    needsRehash(stored) {
      const parsed = parseHash(stored);
      return parsed === null || parsed.params.ln !== params.ln || parsed.params.r !== params.r || parsed.params.p !== params.p;
    },
  };
}

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const cost = 2 ** params.ln;
  const options: ScryptOptions = { N: cost, r: params.r, p: params.p, maxmem: 256 * cost * params.r };
  // Asynchronous scrypt runs on libuv's thread pool, so hashing never blocks the event loop.
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, hashBytes, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export function formatHash({ params, salt, hash }: ParsedHash): string {
  const encode = (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '');
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${encode(salt)}$${encode(hash)}`;
}

export function parseHash(stored: string): ParsedHash | null {
  const match = phcPattern.exec(stored);
  if (match === null) return null;
  const [, ln, r, p, salt, hash] = match as unknown as [string, string, string, string, string, string];
  return { params: { ln: Number(ln), r: Number(r), p: Number(p) }, salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') };
}

/** The same hasher with every scrypt call passed through `limiter`, so that hashing is bounded. */
export function limitPasswordHasher(hasher: PasswordHasher, limiter: Limiter): PasswordHasher {
  return {
    hash: (password) => limiter.run(() => hasher.hash(password)),
    verify: (password, stored) => limiter.run(() => hasher.verify(password, stored)),
    needsRehash: (stored) => hasher.needsRehash(stored),
  };
}
