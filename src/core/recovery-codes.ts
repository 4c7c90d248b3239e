import { createHash } from 'node:crypto';

/** A recovery code as a client sends it: any letter case, hyphens optional. */
export const recoveryCodePattern = /^[a-zA-Z2-7]{4}(-?[a-zA-Z2-7]{4}){3}$/;

/**
 * What is stored and looked up instead of the code. A fast hash is enough: 80 random bits
 * cannot be reached by brute force from a stolen table, and lookup needs determinism.
 */
export function hashRecoveryCode(code: string): Buffer {
  return createHash('sha256').update(code.toLowerCase().replaceAll('-', '')).digest();
}
