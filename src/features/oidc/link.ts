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
 * mailbox (core/proofs.ts 'link-identity'), as adding a passkey does: the first step checks
 * the password, mails a code and sends the browser to the provider; the callback hands the
 * application a code of ours; the second step, from the same session only, takes that code and
 * the mailed one. So a stranger who sends someone the provider's URL cannot link that person's
 * identity to the stranger's account.
 */
type Caller = { account: Account; sessionId: string };
const mailedCodeTtlSeconds = 600;

export type LinkStart = { outcome: 'started'; url: string } | { outcome: 'refused'; refusal: QuotaRefusal }
  | CallerFactorRefusal;

/** Checks the password (and factor), mails a code, and starts the trip to the provider for this session. */
export async function startLink(
  deps: UseCaseDeps, providers: Providers, caller: Caller, provider: OidcProvider, back: Return,
  evidence: { password: string; otp: string | undefined }, client: Client,
): Promise<LinkStart> {
  const { account, sessionId } = caller;
  const check = await requireProof(deps, caller, 'link-identity', evidence, client);
  if (check.outcome !== 'valid') return check;
  // Read before anything is spent: a provider that is away costs the owner no code.
  await providers.metadata(provider);
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + mailedCodeTtlSeconds * 1000);
  const code = generateCode();
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<LinkStart | null> => {
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
    return null;
  });
  if (result !== null) return result;
  deps.outbox.wake();
  const binding = { accountId: account.id, sessionId };
  return { outcome: 'started', url: await beginAttempt(deps, providers, provider, back, binding) };
}

export type Linking = { outcome: 'linked'; identity: LinkedIdentity } | { outcome: 'invalid' | 'wrong-code' };

/**
 * Links the identity of the callback's code, for the session that asked for it, with the
 * redirect_uri and PKCE verifier of its start and the mailed code. The callback's code is used
 * up whatever follows (one guess of the mailed code a trip); a wrong mailed code uses nothing of
 * the mailbox. Every other refusal is the same 'invalid', an identity linked already included.
 */
export async function completeLink(
  deps: UseCaseDeps, caller: Caller,
  request: { code: string; redirectUri: string; verifier: string; emailCode: string }, client: Client,
): Promise<Linking> {
  const { account, sessionId } = caller;
  const now = deps.clock();
  const codeHash = sha256(request.code);
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<Linking> => {
    const grant = await findGrant(tx, codeHash, now);
    if (grant === null || !(await spendGrant(tx, codeHash))) return { outcome: 'invalid' };
    const fits = grant.accountId === account.id && grant.sessionId === sessionId &&
      grant.redirectUri === request.redirectUri && verifierMatches(request.verifier, grant.codeChallenge);
    if (!fits || !(await lockAccountIfSessionLives(tx, caller))) return { outcome: 'invalid' };
    if (!(await useMailbox(tx, 'link-identity', account.id, request.emailCode, now))) return { outcome: 'wrong-code' };
    const identity = await insertIdentity(tx, randomUUID(), account.id, grant, now);
    if (identity === null) return rollBack({ outcome: 'invalid' });
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
