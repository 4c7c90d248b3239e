import { timingSafeEqual } from 'node:crypto';

/**
 * equalSecrets reports whether a and b hold the same bytes (a string as its UTF-8 bytes). For
 * equal lengths it takes the same time whatever the bytes, so that a timing difference reveals
 * nothing of how much of a guess is right; for different lengths it is false at once, so only
 * values whose length is no secret (digests, MACs, codes of a fixed length) are compared here.
 * Every comparison with a secret-bearing value in src/ goes through it.
 */
export function equalSecrets(a: Buffer | string, b: Buffer | string): boolean {
  const left = typeof a === 'string' ? Buffer.from(a) : a;
  const right = typeof b === 'string' ? Buffer.from(b) : b;
  return left.length === right.length && timingSafeEqual(left, right);
}
