import { createHmac, randomBytes } from 'node:crypto';
import { equalSecrets } from './constant-time.ts';

/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP), as every authenticator app
 * computes them: HMAC-SHA1, 6 digits, 30-second steps. Pure functions; storage is in
 * second-factor.ts.
 */

export const stepSeconds = 30;
export const codeDigits = 6;
/** RFC 4226 §4 asks for at least 128 bits and recommends 160: the length of an SHA-1 block key. */
export const secretBytes = 20;

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

export function generateSecret(): Buffer {
  return randomBytes(secretBytes);
}

/** RFC 4226 §5.3: HMAC-SHA1 of the 8-byte counter, dynamically truncated to `digits` decimal digits. */
export function hotp(secret: Buffer, counter: number, digits = codeDigits): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', secret).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** The RFC 6238 time step of an instant: whole 30-second periods since the Unix epoch. */
export function timeStep(at: Date): number {
  return Math.floor(at.getTime() / 1000 / stepSeconds);
}

export function totp(secret: Buffer, at: Date, digits = codeDigits): string {
  return hotp(secret, timeStep(at), digits);
}

/**
 * The step whose code `code` is, among the previous, the current and the next step (clock drift
 * of up to one step either way, RFC 6238 §5.2), or null. All three are computed and compared in
 * constant time, so that the answer's timing says nothing about which digits were right. The
 * caller must still refuse a step at or before the last one used (replay).
 */
export function matchingStep(secret: Buffer, code: string, at: Date): number | null {
  const presented = Buffer.from(code);
  const now = timeStep(at);
  let found: number | null = null;
  for (const step of [now - 1, now, now + 1]) {
    const expected = Buffer.from(hotp(secret, step));
    if (equalSecrets(expected, presented)) found = step;
  }
  return found;
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

/** A 6-digit TOTP code as a client sends it. */
export const totpCodePattern = /^[0-9]{6}$/;
