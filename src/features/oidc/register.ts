import { randomBytes, randomUUID } from 'node:crypto';
import { claimAttemptNotice } from '../../core/accounts.ts';
import { patterns } from '../../core/fields.ts';
import { recordEvent } from '../../core/security-events.ts';
import { inTransaction, wakeWorkers, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { accountActiveMail, registrationAttemptMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import type { Providers } from './provider.ts';
import { sha256, verifierMatches } from './sign-in.ts';
import { findGrant, findLinkedAccount, insertIdentity, insertProviderAccount, spendGrant } from './store.ts';

export type Registration = { outcome: 'accepted' | 'invalid' | 'untrusted' | 'name-taken' };

/**
 * A new account from an identity that no account has (POST /acc/reg/oidc): the user chooses the
 * name, and the address is the provider's, only from a provider the operator trusts for
 * addresses (OIDC_<NAME>_TRUST_EMAIL) and that says it verified it: then the provider's check
 * stands in for the mailed code. Any other identity registers as everyone does, then links.
 * The account is active at once, with the identity linked and a password nobody knows: a reset
 * sets one. An address that is taken is answered as registration answers it, 'accepted', and
 * its owner is told (at most once an hour), as is every registration attempt.
 */
export async function registerWithIdentity(
  deps: UseCaseDeps, providers: Providers,
  request: { code: string; redirectUri: string; verifier: string; name: string }, client: Client,
): Promise<Registration> {
  const now = deps.clock();
  const codeHash = sha256(request.code);
  const grant = await findGrant(deps.sql, codeHash, now);
  const fits = grant !== null && grant.accountId === null && grant.redirectUri === request.redirectUri &&
    verifierMatches(request.verifier, grant.codeChallenge);
  if (!fits || (await findLinkedAccount(deps.sql, grant.issuer, grant.subject)) !== null) {
    if (grant !== null) await spendGrant(deps.sql, codeHash);
    return { outcome: 'invalid' };
  }
  const { email } = grant;
  const trusted = providers.find(grant.provider)?.trustEmail === true && grant.emailVerified;
  if (!trusted || email === null || !patterns.email.test(email)) return { outcome: 'untrusted' };
  const passwordHash = await deps.passwords.hash(randomBytes(32).toString('base64url'));
  const addressKey = deps.keys.address(email);
  const result = await inTransaction(deps.sql, async (tx, rollBack): Promise<Registration> => {
    if (!(await spendGrant(tx, codeHash))) return { outcome: 'invalid' };
    // The provider proved the mailbox: a registration of the address that nobody activated yields.
    await tx`DELETE FROM accounts WHERE lower(email) = lower(${email}) AND activated_at IS NULL`;
    const [holder] = await tx`SELECT id FROM accounts WHERE lower(email) = lower(${email})`;
    if (holder !== undefined) {
      const notice = await claimAttemptNotice(tx, holder.id as string, email, now);
      if (notice !== null) await enqueueMail(tx, registrationAttemptMail(notice), deps.mailer, now);
      return { outcome: 'accepted' };
    }
    const account = await insertProviderAccount(tx, request.name, email, addressKey, passwordHash, now);
    if (account === null) return rollBack({ outcome: 'name-taken' });
    // Another account took the identity meanwhile (two sign-ins at once, the address changed between).
    const linked = await insertIdentity(tx, randomUUID(), account.id, grant, now);
    if (linked === null) return rollBack({ outcome: 'invalid' });
    await recordEvent(tx, account.id, 'activated', client.address, null, now);
    await deps.webhooks.enqueue(tx, 'account.activated', account.publicId, now);
    const mail = accountActiveMail({ email, name: request.name, locale: null }, grant.provider);
    await enqueueMail(tx, mail, deps.mailer, now);
    return { outcome: 'accepted' };
  });
  if (result.outcome === 'accepted') wakeWorkers(deps);
  return result;
}
