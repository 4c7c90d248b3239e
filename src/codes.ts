import { createHash, randomInt } from 'node:crypto';

const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** `XXXX-XXXX-XXXX-XXXX` from 16 uniformly drawn letters: 16 × log2(26) ≈ 75 bits. */
export function generateRegistrationCode(): string {
  const drawn = Array.from({ length: 16 }, () => letters[randomInt(letters.length)]).join('');
  return drawn.match(/.{4}/g)!.join('-');
}

/**
 * What is stored and looked up instead of the code. A fast hash is enough: the code has
 * 75 random bits, so no dictionary or brute force reaches it, and lookup needs determinism.
 * Letter case is folded first because clients may send the code in any case.
 */
export function hashRegistrationCode(code: string): Buffer {
  return createHash('sha256').update(code.toUpperCase()).digest();
}
