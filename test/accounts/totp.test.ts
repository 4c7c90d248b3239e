import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hotp, matchingStep, timeStep, totp } from '../../src/core/totp.ts';
import { hashRecoveryCode, recoveryCodePattern } from '../../src/core/recovery-codes.ts';
import {
  base32Decode, base32Encode, generateRecoveryCode, generateSecret, otpauthUri,
} from '../../src/features/second-factor/enrollment.ts';
import { patterns } from '../../src/core/fields.ts';
import { referenceTotp } from '../helpers/totp.ts';

// RFC 6238 Appendix B, the SHA-1 rows: the seed is the ASCII "12345678901234567890", 8 digits.
const rfcSeed = Buffer.from('12345678901234567890', 'ascii');
const rfcVectors: Array<[number, string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

describe('totp', () => {
  it('gives the RFC 6238 SHA-1 test vectors', () => {
    for (const [seconds, expected] of rfcVectors) assert.equal(totp(rfcSeed, new Date(seconds * 1000), 8), expected, `T = ${seconds}`);
  });

  it('agrees with the tests\' own implementation, which gives the RFC vectors too', () => {
    for (const [seconds, expected] of rfcVectors) assert.equal(referenceTotp(base32Encode(rfcSeed), seconds, 8), expected);
    const secret = generateSecret();
    for (const seconds of [0, 29, 30, 1_800_000_000, 1_800_000_017]) {
      assert.equal(totp(secret, new Date(seconds * 1000)), referenceTotp(base32Encode(secret), seconds));
    }
  });

  it('gives RFC 4226 Appendix D HOTP values', () => {
    assert.deepEqual([0, 1, 2, 9].map((counter) => hotp(rfcSeed, counter)), ['755224', '287082', '359152', '520489']);
  });

  it('encodes and decodes RFC 4648 base32', () => {
    assert.equal(base32Encode(Buffer.from('foobar')), 'MZXW6YTBOI');
    assert.equal(base32Encode(Buffer.from('f')), 'MY');
    assert.equal(base32Decode('MZXW6YTBOI')!.toString(), 'foobar');
    assert.equal(base32Decode('mzxw6ytboi======')!.toString(), 'foobar');
    assert.equal(base32Decode('MZXW6YTB0I'), null, 'the digit 0 is not base32');
    const secret = generateSecret();
    assert.equal(secret.length, 20);
    assert.equal(base32Encode(secret).length, 32);
    assert.deepEqual(base32Decode(base32Encode(secret)), secret);
  });

  it('matches the previous, current and next step, and nothing further', () => {
    const secret = generateSecret();
    const at = new Date(1_800_000_015_000);
    const step = timeStep(at);
    for (const offset of [-1, 0, 1]) assert.equal(matchingStep(secret, hotp(secret, step + offset), at), step + offset);
    for (const offset of [-2, 2]) {
      const code = hotp(secret, step + offset);
      // A code of a far step can by chance equal a near one's; only then may it match.
      const collides = [-1, 0, 1].some((near) => hotp(secret, step + near) === code);
      assert.equal(matchingStep(secret, code, at) !== null, collides);
    }
    assert.equal(matchingStep(secret, '12345', at), null);
  });

  it('makes an otpauth URI that authenticator apps read', () => {
    const uri = new URL(otpauthUri(rfcSeed, 'Example Co', 'alice'));
    assert.equal(uri.protocol, 'otpauth:');
    assert.equal(uri.host, 'totp');
    assert.equal(decodeURIComponent(uri.pathname), '/Example Co:alice');
    assert.deepEqual(Object.fromEntries(uri.searchParams), { secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', issuer: 'Example Co', algorithm: 'SHA1', digits: '6', period: '30' });
  });
});

describe('recovery codes', () => {
  it('are 16 base32 letters in four groups, accepted with or without hyphens in any case, hashed the same', () => {
    const codes = new Set(Array.from({ length: 50 }, generateRecoveryCode));
    assert.equal(codes.size, 50);
    for (const code of codes) {
      assert.match(code, /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
      assert.ok(recoveryCodePattern.test(code) && patterns.otp.test(code));
      assert.deepEqual(hashRecoveryCode(code.toUpperCase().replaceAll('-', '')), hashRecoveryCode(code));
    }
    for (const bad of ['12345', '1234567', 'abcd-efgh-ijkl', 'abcd-efgh-ijkl-mno1', 'abcd efgh ijkl mnop']) assert.equal(patterns.otp.test(bad), false, bad);
  });
});
