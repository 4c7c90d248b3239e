import { randomBytes } from 'node:crypto';
import { recordEvent } from '../../core/security-events.ts';
import { findPasskeyOwner, recordPasskeyUse, spendChallenge } from './store.ts';
import {
  readAssertion, verifyAssertion, type Assertion, type RelyingParty, type StoredCredential,
} from './webauthn.ts';
import { startSession } from '../../core/sessions.ts';
import { challengeTtlSeconds, openChallenge, sealChallenge } from './manage.ts';
import type { SignIn } from '../../http/oauth.ts';
import { inTransaction, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { rememberClient } from '../../core/login-throttle.ts';
import { resetIdentifier } from '../../core/password-check.ts';
import { clientNetwork } from '../../http/rate-limit.ts';

/**
 * Usernameless sign-in with a passkey. The options name no account, so every caller gets the
 * same answer, and nothing is stored for them: the challenge travels sealed in challenge_id
 * (sealChallenge). A presented challenge is spent in the database, once, whatever follows.
 */
export function startPasskeySignIn(
  deps: UseCaseDeps, rp: RelyingParty,
): { challengeId: string; options: Record<string, unknown> } {
  const { challenge, challengeId } = sealChallenge(deps, 'sign-in');
  const options = {
    challenge: challenge.toString('base64url'), rpId: rp.id, timeout: challengeTtlSeconds * 1000,
    userVerification: 'required', allowCredentials: [],
  };
  return { challengeId, options };
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
  const challenge = openChallenge(deps, challengeId, 'sign-in');
  if (assertion === null || challenge === null) return { outcome: 'refused' };
  if (!(await spendChallenge(deps.sql, challenge.challenge, challenge.expiresAt))) return { outcome: 'refused' };
  const owner = await findPasskeyOwner(deps.sql, assertion.credentialId);
  const verified = verifyAssertion(rp, challenge.challenge, assertion, owner ?? decoyFor(assertion));
  if (owner === null) return { outcome: 'refused' };
  const now = deps.clock();
  if (verified.outcome === 'refused') {
    if (verified.reason === 'counter') {
      await recordEvent(deps.sql, owner.accountId, 'passkey-counter-regressed', client.address, null, now);
    }
    return { outcome: 'refused' };
  }
  const wait = takeAllowance(owner.accountId);
  if (wait > 0) return { outcome: 'limited', retryAfterSeconds: wait };
  const { accountId, passwordHash } = owner;
  const { refreshTtlSeconds, sessionsPerAccount } = deps.config;
  const { signCount, backedUp } = verified;
  type Started = Awaited<ReturnType<typeof startSession>>;
  const started = await inTransaction<Started>(deps.sql, async (tx, rollBack) => {
    const session =
      await startSession(tx, accountId, passwordHash, null, client, now, refreshTtlSeconds, sessionsPerAccount);
    if (session === null || session === 'disabled') return session;
    // The counter's compare-and-set, after the account row that the session's statement holds
    // (the lock order): of two sign-ins checked against one counter value one passes, and none
    // after the passkey's removal, which holds the account row while it ends the sessions.
    const counted = await recordPasskeyUse(tx, owner.id, owner.signCount, signCount, backedUp, now);
    return counted ? session : rollBack(null);
  });
  if (started === null) return { outcome: 'refused' };
  // Only the holder of the passkey gets here: the owner, who may learn that an operator disabled the account.
  if (started === 'disabled') return { outcome: 'disabled' };
  // The owner's way past a spent reset quota starts from the networks it signs in from, by passkey too.
  const reset = deps.keys.loginIdentifier(resetIdentifier(owner.email));
  await rememberClient(deps.sql, [reset], deps.keys.client(clientNetwork(client.address)), now);
  await deps.announceSignIn(accountId, client, 'passkey');
  return { outcome: 'signed-in', accountPublicId: owner.publicId, ...started };
}

/**
 * The keys an unknown credential is checked against, one of the kind its signature's length
 * shows (Ed25519: 64 bytes; RSA: as long as the modulus; ES256: DER, about 70), so that it costs
 * the check a known key of that kind costs (an RSA or Ed25519 key checked against an ES256 decoy
 * takes 0.06 to 0.1 ms less). COSE keys, as stored. A decoy's
 * private half is worth nothing: an unknown credential is refused whatever the check says,
 * and an RSA decoy's modulus is random bytes, which verify as slowly as a real one.
 */
const decoys = new Map<number, StoredCredential>();
const decoyOf = (publicKey: Buffer): StoredCredential =>
  ({ publicKey, signCount: 0, backupEligible: false, userHandle: Buffer.alloc(16) });
// {1: 2, 3: -7, -1: 1, -2: x, -3: y}
const es256 = decoyOf(Buffer.from(
  'a5010203262001215820119514753dac2f43519211c10c488cf57836d70877ae078ce1e9ea22f22744e0' +
    '22582099053559a8f2818254299b590eb1b46fb02498c22bbc2a89a08c701670fa1a9c',
  'hex',
));
// {1: 1, 3: -8, -1: 6, -2: x}
const ed25519 = 'a4010103272006215820b2551d0d551859d1a9a6a752fd1f0703f37edd111923f932b164eb8a63c1a81b';
decoys.set(64, decoyOf(Buffer.from(ed25519, 'hex')));
for (const bytes of [256, 384, 512]) {
  const modulus = randomBytes(bytes);
  modulus[0]! |= 0x80;
  modulus[bytes - 1]! |= 1;
  // {1: 3, 3: -257, -1: n, -2: 65537}
  const head = Buffer.from(`a40103033901002059${bytes.toString(16).padStart(4, '0')}`, 'hex');
  decoys.set(bytes, decoyOf(Buffer.concat([head, modulus, Buffer.from('2143010001', 'hex')])));
}

export function decoyFor(assertion: Assertion): StoredCredential {
  return decoys.get(assertion.fields.signature!.length) ?? es256;
}
