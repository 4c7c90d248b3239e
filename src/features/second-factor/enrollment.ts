import { randomBytes } from 'node:crypto';
import { drawGroupedCode } from '../../core/one-time-codes.ts';
import { codeDigits, stepSeconds } from '../../core/totp.ts';
import type { Transaction } from '../../storage/db.ts';

/**
 * What enrolling a TOTP factor makes (RFC 6238; the check of a code is the core's, core/totp.ts
 * and core/factor.ts): the secret, its otpauth URI in RFC 4648 base32, the recovery codes, and the
 * statements that store a pending factor and activate it.
 */

/** RFC 4226 §4 asks for at least 128 bits and recommends 160: the length of an SHA-1 block key. */
export const secretBytes = 20;

export function generateSecret(): Buffer {
  return randomBytes(secretBytes);
}

const base32Alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32, without padding, as otpauth URIs carry secrets. */
export function base32Encode(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += base32Alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += base32Alphabet[(value << (5 - bits)) & 31];
  return out;
}

/** The bytes of an RFC 4648 base32 text (any letter case, padding optional), or null if it is not one. */
export function base32Decode(text: string): Buffer | null {
  const digits = text.toUpperCase().replace(/=+$/, '');
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of digits) {
    const index = base32Alphabet.indexOf(char);
    if (index < 0) return null;
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
    value &= (1 << bits) - 1;
  }
  return Buffer.from(out);
}

/**
 * The Key Uri Format that authenticator apps read (often from a QR code):
 * otpauth://totp/<issuer>:<account>?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30.
 */
export function otpauthUri(secret: Buffer, issuer: string, accountName: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(accountName)}`;
  const query =
    `secret=${base32Encode(secret)}&issuer=${encodeURIComponent(issuer)}` +
    `&algorithm=SHA1&digits=${codeDigits}&period=${stepSeconds}`;
  return `otpauth://totp/${label}?${query}`;
}

/** How many recovery codes an owner gets when a factor is activated. */
export const recoveryCodeCount = 10;

const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';

/** `xxxx-xxxx-xxxx-xxxx` from 16 uniformly drawn symbols of 32: 80 bits. */
export const generateRecoveryCode = (): string => drawGroupedCode(alphabet);

/**
 * Stores a pending enrollment, replacing an earlier pending one; false, changing nothing, when a
 * factor is already active. One statement, so that two enrollments and a confirmation cannot
 * interleave into an active factor with a secret that no one confirmed.
 */
export async function startEnrollment(
  tx: Transaction, accountId: string, sealedSecret: Buffer, now: Date,
): Promise<boolean> {
  const rows = await tx`
    INSERT INTO second_factors AS f (account_id, sealed_secret, created_at)
    VALUES (${accountId}, ${sealedSecret}, ${now})
    ON CONFLICT (account_id) DO UPDATE
    SET sealed_secret = excluded.sealed_secret, created_at = excluded.created_at, last_used_step = NULL
    WHERE f.activated_at IS NULL
    RETURNING 1`;
  return rows.count === 1;
}

/**
 * Activates the pending enrollment whose secret is `sealedSecret` (the one the code was checked
 * against), with `step` as its first used step; false when it was replaced or activated meanwhile.
 * Its recovery codes replace any left from an earlier factor.
 */
export async function activateFactor(
  tx: Transaction, accountId: string, sealedSecret: Buffer, step: number, recoveryHashes: Buffer[], now: Date,
): Promise<boolean> {
  const rows = await tx`
    UPDATE second_factors SET activated_at = ${now}, last_used_step = ${step}
    WHERE account_id = ${accountId} AND activated_at IS NULL AND sealed_secret = ${sealedSecret}`;
  if (rows.count === 0) return false;
  await tx`DELETE FROM recovery_codes WHERE account_id = ${accountId}`;
  const codeRows = recoveryHashes.map((codeHash) => ({ account_id: accountId, code_hash: codeHash }));
  await tx`INSERT INTO recovery_codes ${tx(codeRows)}`;
  return true;
}
