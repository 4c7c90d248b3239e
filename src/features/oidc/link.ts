import { randomUUID } from 'node:crypto';
import type { Account } from '../../core/accounts.ts';
import { accountQuotaKey, reserveAddressRequest, type QuotaRefusal } from '../../core/address-quotas.ts';
import { useSecondFactor } from '../../core/factor.ts';
import { generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import type { CallerFactorRefusal } from '../../core/password-check.ts';
import { requireProof, useMailbox } from '../../core/proofs.ts';
import { recordEvent } from '../../core/security-events.ts';
import {
  inTransaction, lockAccountIfSessionLives, wakeWorkers, type Client, type UseCaseDeps,
} from '../../core/transaction.ts';
import { actCodeMail, noticeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import type { Providers } from './provider.ts';
import type { OidcProvider } from './settings.ts';
import { beginAttempt, sha256, verifierMatches, type Return } from './sign-in.ts';
import {
  deleteIdentity, findGrant, insertIdentity, spendGrant, type LinkedIdentity,
} from './store.ts';

/**
 * Linking a provider's identity to a signed-in account, and removing one. An identity signs in
 * without the password and outlives a reset, so linking needs the password, the factor and the
 * mailbox (core/proofs.ts 'link-identity'), as adding a passkey does. The callback hands the
 * application a code, and only the session that asked completes the link with it, so that a
 * stranger who sends someone the provider's URL cannot link that person's identity to the
 * stranger's account.
 */
type Caller = { account: Account; sessionId: string };
const challengeTtlSeconds = 600;

export type LinkStart = { outcome: 'started'; challengeId: string } | { outcome: 'refused'; refusal: QuotaRefusal }
  | CallerFactorRefusal;

/** Checks the password (and factor), and mails a code; challenge_id carries the provider, sealed to this session. */
export async function startLink(
  deps: UseCaseDeps, caller: Caller, provider: OidcProvider, password: string, otp: string | undefined, client: Client,
): Promise<LinkStart> {
  const { account, sessionId } = caller;
  const check = await requireProof(deps, caller, 'link-identity', { password, otp }, client);
  if (check.outcome !== 'valid') return check;
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + challengeTtlSeconds * 1000);
  const code = generateCode();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<LinkStart> => {
    const refusal = await reserveAddressRequest(tx, 'identity', accountQuotaKey(deps.keys, account.publicId), now);
    if (refusal !== null) return rollBack({ outcome: 'refused', refusal });
    if (!(await lockAccountIfSessionLives(tx, caller))) return rollBack({ outcome: 'session-ended' });
    if (!(await useSecondFactor(tx, deps, account, check.proof, client.address, sessionId, now))) {
      return rollBack({ outcome: 'wrong-otp' });
    }
    await storeCode(tx, 'identity', account.id, hashCode(code), expiresAt, now);
    const values = { provider: provider.name };
    const mail = actCodeMail('identity-code', account, code, expiresAt, now, client.address, values);
    await enqueueMail(tx, mail, deps.mailer, now);
    const sealed = deps.sealer.seal(Buffer.from(`${expiresAt.getTime()} ${provider.name}`), 'oidc', linkRow(caller));
    return { outcome: 'started', challengeId: sealed.toString('base64url') };
  });
  if (result.outcome === 'started') deps.outbox.wake();
  return result;
}

const linkRow = ({ account, sessionId }: Caller) => `link ${account.id} ${sessionId}`;

export type Authorization =
  | { outcome: 'authorize'; url: string }
  | { outcome: 'unknown-challenge' | 'wrong-code' }
  | { outcome: 'session-ended' };

/** Uses the mailed code up and starts the trip to the provider that challenge_id names. */
export async function authorizeLink(
  deps: UseCaseDeps, providers: Providers, caller: Caller, challengeId: string, emailCode: string, back: Return,
): Promise<Authorization> {
  const opened = challengeId.length <= 300
    ? deps.sealer.open(Buffer.from(challengeId, 'base64url'), 'oidc', linkRow(caller))
    : null;
  const [expiry, name] = opened === null ? [] : opened.plaintext.toString().split(' ');
  const provider = name === undefined ? undefined : providers.find(name);
  const now = deps.clock();
  if (provider === undefined || Number(expiry) <= now.getTime()) return { outcome: 'unknown-challenge' };
  // Read before the code is used up: a provider that is away costs the owner no code.
  await providers.metadata(provider);
  const used = await inTransaction(deps.sql, async (tx): Promise<Authorization | null> => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'session-ended' };
    const codeUsed = await useMailbox(tx, 'link-identity', caller.account.id, emailCode, now);
    return codeUsed ? null : { outcome: 'wrong-code' };
  });
  if (used !== null) return used;
  const binding = { accountId: caller.account.id, sessionId: caller.sessionId };
  return { outcome: 'authorize', url: await beginAttempt(deps, providers, provider, back, binding) };
}

export type Linking = { outcome: 'linked'; identity: LinkedIdentity } | { outcome: 'invalid' };

/**
 * Links the identity of a link code, for the session that asked for it, with the redirect_uri
 * and PKCE verifier of its start. Every refusal is the same 'invalid', an identity linked
 * already (to this account or another) included, and uses the code up.
 */
export async function completeLink(
  deps: UseCaseDeps, caller: Caller, code: string, redirectUri: string, verifier: string, client: Client,
): Promise<Linking> {
  const { account, sessionId } = caller;
  const now = deps.clock();
  const codeHash = sha256(code);
  const result = await inTransaction(deps.sql, async (tx): Promise<Linking> => {
    const grant = await findGrant(tx, codeHash, now);
    if (grant === null || !(await spendGrant(tx, codeHash))) return { outcome: 'invalid' };
    const fits = grant.accountId === account.id && grant.sessionId === sessionId &&
      grant.redirectUri === redirectUri && verifierMatches(verifier, grant.codeChallenge);
    if (!fits || !(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'invalid' };
    const identity = await insertIdentity(tx, randomUUID(), account.id, grant, now);
    if (identity === null) return { outcome: 'invalid' };
    await recordEvent(tx, account.id, 'identity-linked', client.address, sessionId, now);
    const mail = noticeMail('identity-linked', account, now, client.address, { provider: grant.provider });
    await enqueueMail(tx, mail, deps.mailer, now);
    const data = { identity_id: identity.id, provider: grant.provider };
    await deps.webhooks.enqueue(tx, 'identity.linked', account.publicId, now, data);
    return { outcome: 'linked', identity };
  });
  if (result.outcome === 'linked') wakeWorkers(deps);
  return result;
}

export type Removal = { outcome: 'removed' } | { outcome: 'unknown' } | CallerFactorRefusal;

/** Removes one of the caller's identities, with the password; the sessions it started stay (a reset ends them). */
export async function removeIdentity(
  deps: UseCaseDeps, caller: Caller, id: string, password: string, client: Client,
): Promise<Removal> {
  const { account, sessionId } = caller;
  const check = await requireProof(deps, caller, 'unlink-identity', { password }, client);
  if (check.outcome !== 'valid') return check;
  const now = deps.clock();
  const result = await inTransaction(deps.sql, async (tx): Promise<Removal> => {
    if (!(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'session-ended' };
    const provider = await deleteIdentity(tx, account.id, id);
    if (provider === null) return { outcome: 'unknown' };
    await recordEvent(tx, account.id, 'identity-removed', client.address, sessionId, now);
    await enqueueMail(tx, noticeMail('identity-removed', account, now, client.address, { provider }), deps.mailer, now);
    await deps.webhooks.enqueue(tx, 'identity.removed', account.publicId, now, { identity_id: id, provider });
    return { outcome: 'removed' };
  });
  if (result.outcome === 'removed') wakeWorkers(deps);
  return result;
}
