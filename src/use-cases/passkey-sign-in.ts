import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { recordEvent } from '../accounts/security-events.ts';
import { findPasskeyOwner, recordPasskeyUse, spendSignInChallenge } from '../passkeys/passkeys.ts';
import {
  decodeBase64Url, readAssertion, verifyAssertion, type RelyingParty, type StoredCredential,
} from '../passkeys/webauthn.ts';
import { startSession } from '../sessions/sessions.ts';
import { challengeTtlSeconds } from './passkeys.ts';
import type { SignIn } from './sign-in.ts';
import { retryOnce, type Client, type UseCaseDeps } from './transaction.ts';

/**
 * Usernameless sign-in with a passkey. The options name no account, so every caller gets the
 * same answer, and nothing is stored for them: the challenge travels sealed in challenge_id
 * (sealing.ts, bound to its purpose) with its expiry, so a stranger's flood of options requests
 * writes nothing. A presented challenge is spent in the database, once, whatever follows.
 */
export function startPasskeySignIn(
  deps: UseCaseDeps, rp: RelyingParty,
): { challengeId: string; options: Record<string, unknown> } {
  const challenge = randomBytes(32);
  const expiry = Buffer.alloc(8);
  expiry.writeBigUInt64BE(BigInt(deps.clock().getTime() + challengeTtlSeconds * 1000));
  const sealed = deps.sealer.seal(Buffer.concat([expiry, challenge]), 'passkey-challenge', 'sign-in');
  const options = {
    challenge: challenge.toString('base64url'), rpId: rp.id, timeout: challengeTtlSeconds * 1000,
    userVerification: 'required', allowCredentials: [],
  };
  return { challengeId: sealed.toString('base64url'), options };
}

/**
 * Checks an assertion and starts a session; a passkey is a second factor in itself, so no otp
 * is asked. An unknown credential, another account's (a user handle that is not its owner's)
 * and a bad signature take the same statements and one signature check each (an unknown one
 * against a decoy key), and end in the same 'refused'. A counter that did not grow is a clone
 * signal: refused, and recorded as the owner's event.
 */
export async function signInWithPasskey(
  deps: UseCaseDeps, rp: RelyingParty, challengeId: string, credential: unknown, client: Client,
  takeAllowance: (accountId: string) => number,
): Promise<SignIn> {
  const assertion = readAssertion(credential);
  const challenge = openChallenge(deps, challengeId);
  if (assertion === null || challenge === null) return { outcome: 'refused' };
  if (!(await spendSignInChallenge(deps.sql, challenge.challenge, challenge.expiresAt))) return { outcome: 'refused' };
  const owner = await findPasskeyOwner(deps.sql, assertion.credentialId);
  const verified = verifyAssertion(rp, challenge.challenge, assertion, owner ?? decoy());
  if (owner === null) return { outcome: 'refused' };
  const now = deps.clock();
  if (verified.outcome === 'refused') {
    if (verified.reason === 'counter') {
      await recordEvent(deps.sql, owner.accountId, 'passkey-counter-regressed', client.address, null, now);
    }
    return { outcome: 'refused' };
  }
  // The compare-and-set: of two sign-ins checked against one counter value, one passes.
  const { signCount, backedUp } = verified;
  const counted = await recordPasskeyUse(deps.sql, owner.id, owner.signCount, signCount, backedUp, now);
  if (!counted) return { outcome: 'refused' };
  const wait = takeAllowance(owner.accountId);
  if (wait > 0) return { outcome: 'limited', retryAfterSeconds: wait };
  const { accountId, passwordHash } = owner;
  const { refreshTtlSeconds, sessionsPerAccount } = deps.config;
  const started = await retryOnce(() =>
    startSession(deps.sql, accountId, passwordHash, null, client, now, refreshTtlSeconds, sessionsPerAccount));
  if (started === null) return { outcome: 'refused' };
  // Only the holder of the passkey gets here: the owner, who may learn that an operator disabled the account.
  if (started === 'disabled') return { outcome: 'disabled' };
  return { outcome: 'signed-in', accountPublicId: owner.publicId, ...started };
}

/** The challenge a challenge_id carries, if this service sealed it for sign-in and it has not expired. */
function openChallenge(deps: UseCaseDeps, challengeId: string): { challenge: Buffer; expiresAt: Date } | null {
  const sealed = challengeId.length <= 200 ? decodeBase64Url(challengeId) : null;
  const opened = sealed === null ? null : deps.sealer.open(sealed, 'passkey-challenge', 'sign-in');
  if (opened === null || opened.plaintext.length !== 40) return null;
  const expiresAt = new Date(Number(opened.plaintext.readBigUInt64BE(0)));
  return expiresAt > deps.clock() ? { challenge: opened.plaintext.subarray(8), expiresAt } : null;
}

let decoyCredential: StoredCredential | null = null;

/** An ES256 key nobody holds, so that an unknown credential costs the signature check a known one costs. */
function decoy(): StoredCredential {
  if (decoyCredential !== null) return decoyCredential;
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const [x, y] = [Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')];
  // COSE_Key {1: 2, 3: -7, -1: 1, -2: x, -3: y}, as an authenticator encodes it.
  const publicKey = Buffer.concat([Buffer.from('a5010203262001215820', 'hex'), x, Buffer.from('225820', 'hex'), y]);
  return (decoyCredential = { publicKey, signCount: 0, backupEligible: false, userHandle: randomBytes(16) });
}
