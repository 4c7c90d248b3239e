import { createHmac } from 'node:crypto';

/**
 * The tests' own RFC 6238 implementation, written apart from src/core/totp.ts so that the
 * service is checked against something it does not share code with (and which is itself
 * checked against the RFC's test vectors in test/accounts/totp.test.ts).
 */
export function referenceTotp(secretBase32: string, unixSeconds: number, digits = 6): string {
  const key = fromBase32(secretBase32);
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(unixSeconds / 30)));
  const mac = createHmac('sha1', key).update(counter).digest();
  const start = mac[19]! & 0xf;
  const value = ((mac[start]! & 0x7f) << 24) | (mac[start + 1]! << 16) | (mac[start + 2]! << 8) | mac[start + 3]!;
  return (value % 10 ** digits).toString().padStart(digits, '0');
}

function fromBase32(text: string): Buffer {
  const bits = [...text.replace(/=/g, '')].map((char) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.indexOf(char.toUpperCase()).toString(2).padStart(5, '0')).join('');
  const bytes = bits.match(/.{8}/g) ?? [];
  return Buffer.from(bytes.map((byte) => parseInt(byte, 2)));
}
