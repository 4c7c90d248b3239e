import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { decodeCbor } from '../../src/features/passkeys/cbor.ts';
import {
  parseAuthenticatorData, publicKeyFromCose, readAssertion, verifyAssertion, verifyRegistration, verifySignature, type RelyingParty,
} from '../../src/features/passkeys/webauthn.ts';
import { createAuthenticator, encodeCbor, type Algorithm } from '../helpers/authenticator.ts';
import { decoyFor } from '../../src/features/passkeys/sign-in.ts';

const vectors = JSON.parse(readFileSync(new URL('./spec-vectors.json', import.meta.url), 'utf8'));
const hex = (text: string) => Buffer.from(text, 'hex');
const b64 = (bytes: Buffer) => bytes.toString('base64url');
const specRp: RelyingParty = { id: 'example.org', name: 'Example', origins: ['https://example.org'] };

function registrationOf(vector: { credentialID: string; clientDataJSON: string; attestationObject: string }) {
  const id = b64(hex(vector.credentialID));
  return { id, rawId: id, type: 'public-key', response: { clientDataJSON: b64(hex(vector.clientDataJSON)), attestationObject: b64(hex(vector.attestationObject)) } };
}

describe('W3C WebAuthn §16 test vectors (published data; expected results written here)', () => {
  it('§16.2 none/ES256: the attested credential is read exactly, and this service refuses it for want of UV', () => {
    const vector = vectors.registration.NoneES256;
    const attestation = decodeCbor(hex(vector.attestationObject)) as Map<string, unknown>;
    assert.equal(attestation.get('fmt'), 'none');
    const data = parseAuthenticatorData(attestation.get('authData') as Buffer)!;
    assert.equal(data.flags, 0x59, 'UP, BE, BS and AT; no UV');
    assert.equal(data.signCount, 0);
    assert.equal(data.credential!.id.toString('hex'), vector.credentialID);
    assert.equal(data.credential!.aaguid.toString('hex'), '8446ccb9ab1db374750b2367ff6f3a1f');
    assert.equal(data.credential!.publicKey.toString('hex'), vectors.authentication.NoneES256.credentialPubKey, 'the key that §16.2 signs with');
    assert.equal(publicKeyFromCose(data.credential!.publicKey)!.algorithm, -7);
    // Every check before user verification passes: type, challenge, origin, RP ID hash, UP.
    assert.deepEqual(verifyRegistration(specRp, hex(vector.challenge), registrationOf(vector)), { outcome: 'refused', reason: 'user-verification' });
    assert.deepEqual(verifyRegistration({ ...specRp, id: 'example.com' }, hex(vector.challenge), registrationOf(vector)), { outcome: 'refused', reason: 'rp-id' });
    assert.deepEqual(verifyRegistration({ ...specRp, origins: ['https://example.org:443'] }, hex(vector.challenge), registrationOf(vector)), { outcome: 'refused', reason: 'origin' });
    assert.deepEqual(verifyRegistration(specRp, Buffer.alloc(32), registrationOf(vector)), { outcome: 'refused', reason: 'challenge' });
  });

  it('§16.4 crossOrigin true is refused; §16.3 packed self attestation is not none; §16.6 a 1023-byte credential id is read', () => {
    const cross = vectors.registration.NoneES256CrossOrigin;
    assert.deepEqual(verifyRegistration(specRp, hex(cross.challenge), registrationOf(cross)), { outcome: 'refused', reason: 'cross-origin' });
    const packed = vectors.registration.PackedSelfES256;
    assert.deepEqual(verifyRegistration(specRp, hex(packed.challenge), registrationOf(packed)), { outcome: 'refused', reason: 'attestation' });
    const long = vectors.registration.NoneES256LongCredentialID;
    const data = parseAuthenticatorData((decodeCbor(hex(long.attestationObject)) as Map<string, Buffer>).get('authData')!)!;
    assert.equal(data.credential!.id.length, 1023);
    assert.equal(data.credential!.id.toString('hex'), long.credentialID);
  });

  for (const [name, algorithm] of [['NoneES256', -7], ['PackedSelfES256', -7], ['PackedRS256', -257], ['PackedEdDSA', -8]] as const) {
    it(`authentication ${name}: the signature verifies with the COSE key (${algorithm}), and not once a byte changes`, () => {
      const vector = vectors.authentication[name];
      const key = publicKeyFromCose(hex(vector.credentialPubKey))!;
      assert.equal(key.algorithm, algorithm);
      const [authData, clientData, signature] = [hex(vector.authenticatorData), hex(vector.clientDataJSON), hex(vector.signature)];
      assert.equal(verifySignature(key, authData, clientData, signature), true);
      const bent = Buffer.from(clientData);
      bent[bent.length - 3] = bent[bent.length - 3]! ^ 1;
      assert.equal(verifySignature(key, authData, bent, signature), false);
      const id = b64(hex(vector.credentialID));
      const assertion = readAssertion({ id, rawId: id, type: 'public-key', response: { clientDataJSON: b64(clientData), authenticatorData: b64(authData), signature: b64(signature), userHandle: 'AA' } })!;
      const stored = { publicKey: hex(vector.credentialPubKey), signCount: 0, backupEligible: (authData[32]! & 0x08) !== 0, userHandle: Buffer.from([0]) };
      // The vectors were made without UV, which this service requires: refused at that step, after type, challenge, origin and RP ID passed.
      assert.deepEqual(verifyAssertion(specRp, hex(vector.challenge), assertion, stored), { outcome: 'refused', reason: 'user-verification' });
    });
  }
});

const rp: RelyingParty = { id: 'localhost', name: 'Test', origins: ['http://localhost:8080'] };
const origin = 'http://localhost:8080';
const challenge = Buffer.alloc(32, 9);
const options = { challenge: b64(challenge), user: { id: b64(Buffer.alloc(16, 4)) } };

for (const algorithm of [-7, -8, -257] as Algorithm[]) {
  describe(`the node:crypto test authenticator, COSE algorithm ${algorithm}`, () => {
    const auth = createAuthenticator(algorithm);
    const registered = verifyRegistration(rp, challenge, auth.register(options, origin, rp.id));
    assert.equal(registered.outcome, 'verified');
    const credential = (registered as { credential: { publicKey: Buffer; backupEligible: boolean } }).credential;
    const stored = (signCount = 0) => ({ publicKey: credential.publicKey, signCount, backupEligible: credential.backupEligible, userHandle: Buffer.alloc(16, 4) });
    const check = (response: Record<string, unknown>, signCount = 0, expected = challenge) => verifyAssertion(rp, expected, readAssertion(response)!, stored(signCount));
    const reason = (result: { outcome: string; reason?: string }) => result.reason ?? result.outcome;

    it('registers and signs in', () => {
      assert.equal(credential.backupEligible, true);
      assert.deepEqual(check(auth.assert(options, origin, rp.id)), { outcome: 'verified', signCount: auth.signCount, backedUp: true });
    });
    it('refuses a wrong origin, RP ID, type, challenge, a cross-origin frame and a missing UV flag', () => {
      assert.equal(reason(check(auth.assert(options, 'http://localhost:8081', rp.id))), 'origin');
      assert.equal(reason(check(auth.assert(options, origin, 'evil.example'))), 'rp-id');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { type: 'webauthn.create' }))), 'type');
      assert.equal(reason(check(auth.assert(options, origin, rp.id), 0, Buffer.alloc(32, 1))), 'challenge', 'a replay answers an old challenge');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { crossOrigin: true }))), 'cross-origin');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { flags: 0x01 | 0x08 }))), 'user-verification');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { flags: 0x04 | 0x08 }))), 'user-presence');
      assert.equal(reason(verifyRegistration(rp, challenge, auth.register(options, origin, rp.id, { flags: 0x41 | 0x08 }))), 'user-verification');
    });
    it('refuses a counter that does not grow, a foreign user handle, a changed BE flag and another key', () => {
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { signCount: 3 }), 5)), 'counter');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { signCount: 0 }), 5)), 'counter');
      assert.equal(check(auth.assert(options, origin, rp.id, { signCount: 0 }), 0).outcome, 'verified', 'zero and zero: a synced passkey');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { userHandle: b64(Buffer.alloc(16, 5)) }))), 'user-handle');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { userHandle: null }))), 'user-handle');
      assert.equal(reason(check(auth.assert(options, origin, rp.id, { flags: 0x05 }))), 'backup-state');
      const other = createAuthenticator(algorithm);
      other.credentialId = auth.credentialId;
      other.userHandle = auth.userHandle;
      assert.equal(reason(check(other.assert(options, origin, rp.id))), 'signature');
    });
    it('refuses truncated and oversized CBOR, and attestation other than none', () => {
      const good = auth.register(options, origin, rp.id) as { response: { attestationObject: string } };
      const bytes = Buffer.from(good.response.attestationObject, 'base64url');
      const truncated = auth.register(options, origin, rp.id, { attestationObject: bytes.subarray(0, bytes.length - 1) });
      assert.equal(reason(verifyRegistration(rp, challenge, truncated)), 'malformed');
      const trailing = auth.register(options, origin, rp.id, { attestationObject: Buffer.concat([bytes, Buffer.from([0])]) });
      assert.equal(reason(verifyRegistration(rp, challenge, trailing)), 'malformed');
      const oversized = auth.register(options, origin, rp.id, { attestationObject: encodeCbor(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', Buffer.alloc(5000)]])) });
      assert.equal(reason(verifyRegistration(rp, challenge, oversized)), 'malformed');
      assert.equal(reason(verifyRegistration(rp, challenge, auth.register(options, origin, rp.id, { fmt: 'packed' }))), 'attestation');
    });
  });
}

describe('COSE keys (found by an outside tester)', () => {
  const rsa = (bits: number) => generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ format: 'jwk' });
  const cose = (entries: Array<[number, unknown]>) => encodeCbor(new Map<number, unknown>(entries));
  const rsaCose = (n: string, e: Buffer) => cose([[1, 3], [3, -257], [-1, Buffer.from(n, 'base64url')], [-2, e]]);

  it('takes RSA keys of 2048 to 4096 bits with an odd exponent of at least 3, and nothing else', () => {
    const { n } = rsa(2048);
    assert.equal(publicKeyFromCose(rsaCose(n!, Buffer.from([1, 0, 1])))?.algorithm, -257);
    assert.equal(publicKeyFromCose(rsaCose(rsa(4096).n!, Buffer.from([1, 0, 1])))?.algorithm, -257);
    // e = 1 makes every padded hash its own signature; an even e is no RSA key.
    assert.equal(publicKeyFromCose(rsaCose(n!, Buffer.from([1]))), null);
    assert.equal(publicKeyFromCose(rsaCose(n!, Buffer.from([1, 0, 0]))), null);
    // Over 4096 bits no authenticator makes, and it costs more to check than the decoy (a 500 before).
    assert.equal(publicKeyFromCose(rsaCose(rsa(4608).n!, Buffer.from([1, 0, 1]))), null);
  });

  it('refuses a key that carries a private part', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const d = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
    const entries: Array<[number, unknown]> = [
      [1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x!, 'base64url')], [-3, Buffer.from(jwk.y!, 'base64url')],
    ];
    assert.equal(publicKeyFromCose(cose(entries))?.algorithm, -7);
    assert.equal(publicKeyFromCose(cose([...entries, [-4, d]])), null);
  });

  it('refuses an RSA key that carries its private exponent (label -3) or any other label past n and e', () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const { n, e } = publicKey.export({ format: 'jwk' });
    const secret = privateKey.export({ format: 'jwk' });
    const entries: Array<[number, unknown]> = [
      [1, 3], [3, -257], [-1, Buffer.from(n!, 'base64url')], [-2, Buffer.from(e!, 'base64url')],
    ];
    assert.equal(publicKeyFromCose(cose(entries))?.algorithm, -257);
    assert.equal(publicKeyFromCose(cose([...entries, [-3, Buffer.from(secret.d!, 'base64url')]])), null);
    assert.equal(publicKeyFromCose(cose([...entries, [-4, Buffer.from(secret.p!, 'base64url')]])), null);
    assert.equal(publicKeyFromCose(cose([...entries, [2, Buffer.from('kid')]])), null);
  });

  it('refuses an Ed25519 key that carries its private part (label -4) or a y', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const x = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
    const d = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
    const entries: Array<[number, unknown]> = [[1, 1], [3, -8], [-1, 6], [-2, x]];
    assert.equal(publicKeyFromCose(cose(entries))?.algorithm, -8);
    assert.equal(publicKeyFromCose(cose([...entries, [-4, d]])), null);
    assert.equal(publicKeyFromCose(cose([...entries, [-3, x]])), null);
  });
});

describe('the decoy key of an unknown credential', () => {
  it('is of the kind its signature shows, so that it costs the check a known key of that kind costs', () => {
    const kindOf = (signatureBytes: number) => {
      const key = publicKeyFromCose(decoyFor({ credentialId: Buffer.alloc(16), userHandle: null, fields: { signature: Buffer.alloc(signatureBytes) } }).publicKey);
      return [key?.algorithm, key?.key.asymmetricKeyDetails?.modulusLength ?? key?.key.asymmetricKeyType];
    };
    assert.deepEqual(kindOf(64), [-8, 'ed25519']);
    for (const bytes of [256, 384, 512]) assert.deepEqual(kindOf(bytes), [-257, bytes * 8]);
    assert.deepEqual(kindOf(71), [-7, 'ec']);
  });
});

describe('the CBOR reader', () => {
  it('reads definite items and refuses indefinite lengths, tags, floats, repeated keys, depth and trailing bytes', () => {
    assert.deepEqual(decodeCbor(Buffer.from('a2016161026162', 'hex')), new Map([[1, 'a'], [2, 'b']]));
    assert.equal(decodeCbor(Buffer.from('3818', 'hex')), -25);
    assert.equal(decodeCbor(Buffer.from('5f4101ff', 'hex')), null, 'an indefinite byte string');
    assert.equal(decodeCbor(Buffer.from('c24101', 'hex')), null, 'a tag');
    assert.equal(decodeCbor(Buffer.from('f93c00', 'hex')), null, 'a float');
    assert.equal(decodeCbor(Buffer.from('a201010102', 'hex')), null, 'a repeated key');
    assert.equal(decodeCbor(Buffer.from('818181818181818100', 'hex')), null, 'nested past the cap');
    assert.equal(decodeCbor(Buffer.from('0100', 'hex')), null, 'a trailing byte');
    assert.equal(decodeCbor(Buffer.from('5a00010000', 'hex')), null, 'a length past the cap');
    assert.equal(decodeCbor(Buffer.from('62c328', 'hex')), null, 'invalid UTF-8');
  });
});
