import { createHash } from 'node:crypto';
import { drawGroupedCode } from './one-time-codes.ts';

/** How many recovery codes an owner gets when a factor is activated. */
export const recoveryCodeCount = 10;

const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';

/** `xxxx-xxxx-xxxx-xxxx` from 16 uniformly drawn symbols of 32: 80 bits. */
export const generateRecoveryCode = (): string => drawGroupedCode(alphabet);

/** A recovery code as a client sends it: any letter case, hyphens optional. */
export const recoveryCodePattern = /^[a-zA-Z2-7]{4}(-?[a-zA-Z2-7]{4}){3}$/;

/**
 * What is stored and looked up instead of the code. A fast hash is enough: 80 random bits
 * cannot be reached by brute force from a stolen table, and lookup needs determinism.
 */
export function hashRecoveryCode(code: string): Buffer {
  return createHash('sha256').update(code.toLowerCase().replaceAll('-', '')).digest();
}
