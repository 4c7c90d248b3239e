import { createHmac } from 'node:crypto';
import { equalSecrets } from './constant-time.ts';

/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP), as every authenticator app
 * computes them: HMAC-SHA1, 6 digits, 30-second steps. Pure functions; storage is in
 * second-factor.ts.
 */

export const stepSeconds = 30;
export const codeDigits = 6;

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

/** A 6-digit TOTP code as a client sends it. */
export const totpCodePattern = /^[0-9]{6}$/;
