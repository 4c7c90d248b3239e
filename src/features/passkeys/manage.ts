import { randomBytes } from 'node:crypto';
import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import { recordEvent } from '../../core/security-events.ts';
import { actCodeMail, noticeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import {
  credentialIdsOf, deletePasskey, findUserHandle, insertPasskey, listPasskeys, maxPasskeysPerAccount, renamePasskey,
  spendChallenge, type Passkey,
} from './store.ts';
import {
  coseAlgorithms, decodeBase64Url, verifyRegistration, type RelyingParty, type Refusal,
} from './webauthn.ts';
import { endSessions } from '../../core/end-sessions.ts';
import type { CallerFactorRefusal } from '../../core/password-check.ts';
import { useSecondFactor } from '../../core/factor.ts';
import {
  inTransaction, lockAccountIfSessionLives, wakeWorkers, type Client, type UseCaseDeps,
} from '../../core/transaction.ts';
import { requireProof, useMailbox } from '../../core/proofs.ts';

/**
 * Adding, listing, renaming and removing passkeys. Lock order (transaction.ts): the address
 * quota row (step 1), the account row, then the account's codes and passkeys (step 5), events,
 * outbox.
 */
type Caller = { account: Account; sessionId: string };
export type { Passkey };

/** Challenges live five minutes: long enough for a person at a browser prompt, short for a thief. */
export const challengeTtlSeconds = 300;

/**
 * A new challenge, and the challenge_id that carries it sealed with its expiry (sealing.ts),
 * bound to its ceremony: 'sign-in', or registration by one account's session. Nothing is
 * stored until it is presented (spendChallenge, once), so a flood of options requests writes
 * nothing.
 */
export function sealChallenge(deps: UseCaseDeps, ceremony: string): { challenge: Buffer; challengeId: string } {
  const challenge = randomBytes(32);
  const expiry = Buffer.alloc(8);
  expiry.writeBigUInt64BE(BigInt(deps.clock().getTime() + challengeTtlSeconds * 1000));
  const sealed = deps.sealer.seal(Buffer.concat([expiry, challenge]), 'passkey-challenge', ceremony);
  return { challenge, challengeId: sealed.toString('base64url') };
}

/** The challenge a challenge_id carries, if this service sealed it for this ceremony and it has not expired. */
export function openChallenge(
  deps: UseCaseDeps, challengeId: string, ceremony: string,
): { challenge: Buffer; expiresAt: Date } | null {
  const sealed = challengeId.length <= 200 ? decodeBase64Url(challengeId) : null;
  const opened = sealed === null ? null : deps.sealer.open(sealed, 'passkey-challenge', ceremony);
  if (opened === null || opened.plaintext.length !== 40) return null;
  const expiresAt = new Date(Number(opened.plaintext.readBigUInt64BE(0)));
  return expiresAt > deps.clock() ? { challenge: opened.plaintext.subarray(8), expiresAt } : null;
}

const registration = ({ account, sessionId }: Caller) => `registration ${account.id} ${sessionId}`;

export type RegistrationStart =
  | { outcome: 'started'; challengeId: string; options: Record<string, unknown> }
  | { outcome: 'limit' }
  | { outcome: 'refused'; refusal: QuotaRefusal }
  | CallerFactorRefusal;

/**
 * The creation options, and a code mailed to the account: a passkey survives a password reset,
 * so a password (and second factor) alone must not be enough to leave one behind. The request
 * counts in a quota of its own (once a minute, ten a day), as each one sends mail.
 */
export async function startPasskeyRegistration(
  deps: UseCaseDeps, rp: RelyingParty, caller: Caller, password: string, otp: string | undefined, client: Client,
): Promise<RegistrationStart> {
  const { account, sessionId } = caller;
  const check = await requireProof(deps, caller, 'add-passkey', { password, otp }, client);
  if (check.outcome !== 'valid') return check;
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + challengeTtlSeconds * 1000);
  const { challenge, challengeId } = sealChallenge(deps, registration(caller));
  const code = generateCode();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<RegistrationStart> => {
    const refusal = await reserveAddressRequest(tx, 'passkey', accountQuotaKey(deps.keys, account.publicId), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    if (!(await lockAccountIfSessionLives(tx, caller))) return rollBack({ outcome: 'session-ended' });
    const existing = await credentialIdsOf(tx, account.id);
    if (existing.length >= maxPasskeysPerAccount) return rollBack({ outcome: 'limit' });
    const used = await useSecondFactor(tx, deps, account, check.proof, client.address, sessionId, now);
    if (!used) return rollBack({ outcome: 'wrong-otp' });
    const userHandle = await findUserHandle(tx, account.id);
    await storeCode(tx, 'passkey', account.id, hashCode(code), expiresAt, now);
    await enqueueMail(tx, actCodeMail('passkey-code', account, code, expiresAt, now, client.address), deps.mailer, now);
    const options = {
      rp: { id: rp.id, name: rp.name },
      user: { id: userHandle.toString('base64url'), name: account.name, displayName: account.name },
      challenge: challenge.toString('base64url'),
      pubKeyCredParams: coseAlgorithms.map((alg) => ({ type: 'public-key', alg })),
      timeout: challengeTtlSeconds * 1000,
      excludeCredentials: existing.map(({ id, transports }) =>
        ({ type: 'public-key', id: id.toString('base64url'), transports })),
      authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
      attestation: 'none',
    };
    return { outcome: 'started', challengeId, options };
  });
  if (result.outcome === 'started') deps.outbox.wake();
  return result;
}

export type Addition =
  | { outcome: 'added'; passkey: Passkey }
  | { outcome: 'unknown-challenge' | 'wrong-code' | 'limit' | 'registered' }
  | { outcome: 'session-ended' }
  | { outcome: 'invalid'; reason: Refusal };

/**
 * Verifies the browser's response against the caller's challenge and stores the passkey. A live
 * challenge and the code are used up by this request whatever follows, so a refused attempt
 * must start again with new options.
 */
export type AdditionRequest = { challengeId: string; credential: unknown; emailCode: string; name: string | null };

export async function addPasskey(
  deps: UseCaseDeps, rp: RelyingParty, caller: Caller, request: AdditionRequest, client: Client,
): Promise<Addition> {
  const { account, sessionId } = caller;
  const now = deps.clock();
  const challenge = openChallenge(deps, request.challengeId, registration(caller));
  const result = await inTransaction(deps.sql, async (tx): Promise<Addition> => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'session-ended' };
    const spent = challenge !== null && (await spendChallenge(tx, challenge.challenge, challenge.expiresAt));
    // Without a live challenge of this session the code is left alone, so that a request with a
    // made-up challenge cannot spend the owner's; with one, the
    // code is used up whatever follows: one guess a challenge.
    if (challenge === null || !spent) return { outcome: 'unknown-challenge' };
    const codeUsed = await useMailbox(tx, 'add-passkey', account.id, request.emailCode, now);
    if (!codeUsed) return { outcome: 'wrong-code' };
    const verified = verifyRegistration(rp, challenge.challenge, request.credential);
    if (verified.outcome === 'refused') return { outcome: 'invalid', reason: verified.reason };
    const name = request.name ?? `Passkey of ${now.toISOString().slice(0, 10)}`;
    const passkey = await insertPasskey(tx, account.id, verified.credential, name, now);
    if (passkey === null) {
      const held = await credentialIdsOf(tx, account.id);
      return { outcome: held.length >= maxPasskeysPerAccount ? 'limit' : 'registered' };
    }
    await recordEvent(tx, account.id, 'passkey-added', client.address, sessionId, now);
    const mail = noticeMail('passkey-added', account, now, client.address, { passkey_name: passkey.name });
    await enqueueMail(tx, mail, deps.mailer, now);
    await deps.webhooks.enqueue(tx, 'passkey.added', account.publicId, now, { passkey_id: passkey.id });
    return { outcome: 'added', passkey };
  });
  if (result.outcome === 'added') wakeWorkers(deps);
  return result;
}

export function listAccountPasskeys(deps: UseCaseDeps, accountId: string): Promise<Passkey[]> {
  return listPasskeys(deps.sql, accountId);
}

export type Renaming = { outcome: 'renamed'; passkey: Passkey } | { outcome: 'unknown' } | { outcome: 'session-ended' };

/**
 * A new name for one of the caller's passkeys, with a passkey-renamed event and a passkey.renamed
 * webhook; 'unknown' when the account has none with this id.
 */
export async function renameAccountPasskey(
  deps: UseCaseDeps, caller: Caller, id: string, name: string, client: Client,
): Promise<Renaming> {
  const { account, sessionId } = caller;
  const now = deps.clock();
  const result = await inTransaction(deps.sql, async (tx): Promise<Renaming> => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'session-ended' };
    const renamed = await renamePasskey(tx, account.id, id, name);
    if (renamed === null) return { outcome: 'unknown' };
    const { passkey, changed } = renamed;
    // A name given again changes nothing, and is not an event.
    if (!changed) return { outcome: 'renamed', passkey };
    await recordEvent(tx, account.id, 'passkey-renamed', client.address, sessionId, now);
    await deps.webhooks.enqueue(tx, 'passkey.renamed', account.publicId, now, { passkey_id: passkey.id });
    return { outcome: 'renamed', passkey };
  });
  if (result.outcome === 'renamed') wakeWorkers(deps);
  return result;
}

export type Removal = { outcome: 'removed' } | { outcome: 'unknown' } | CallerFactorRefusal;

/** Removes one of the caller's passkeys, with the password (throttled like a sign-in). */
export async function removePasskey(
  deps: UseCaseDeps, caller: Caller, id: string, password: string, client: Client,
): Promise<Removal> {
  const { account, sessionId } = caller;
  const check = await requireProof(deps, caller, 'remove-passkey', { password }, client);
  if (check.outcome !== 'valid') return check;
  const now = deps.clock();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<Removal> => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'session-ended' };
    // The sessions the passkey may have started end with it: every session but the caller's,
    // deleted before the passkey, in the lock order (transaction.ts).
    const others = { accountId: account.id, sessionId: null, keptSessionId: sessionId, record: 'if-ended' } as const;
    await endSessions(tx, { ...others, event: null, now });
    const name = await deletePasskey(tx, account.id, id);
    if (name === null) return rollBack({ outcome: 'unknown' });
    await recordEvent(tx, account.id, 'passkey-removed', client.address, sessionId, now);
    const mail = noticeMail('passkey-removed', account, now, client.address, { passkey_name: name });
    await enqueueMail(tx, mail, deps.mailer, now);
    await deps.webhooks.enqueue(tx, 'passkey.removed', account.publicId, now, { passkey_id: id });
    return { outcome: 'removed' };
  });
  if (result.outcome === 'removed') wakeWorkers(deps);
  return result;
}
