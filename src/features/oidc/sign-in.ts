import { createHash, randomBytes } from 'node:crypto';
import { accountQuotaKey, reserveAddressRequest } from '../../core/address-quotas.ts';
import { equalSecrets } from '../../core/constant-time.ts';
import { checkSecondFactor, useSecondFactor } from '../../core/factor.ts';
import { startSession, type SessionTokens } from '../../core/sessions.ts';
import { inTransaction, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { identityUnknownMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import type { SignIn } from '../../http/oauth.ts';
import { callbackUrl, exchangeCode, ProviderFailure, verifyIdToken, type Providers } from './provider.ts';
import type { OidcProvider } from './settings.ts';
import {
  findAddressOwner, findAttempt, findGrant, findLinkedAccount, insertAttempt, insertGrant, spendAttempt, spendGrant,
  touchIdentity, type Attempt,
} from './store.ts';

/** An attempt lives ten minutes: a person at the provider's login page; a code of ours, one minute. */
const attemptTtlSeconds = 600;
const codeTtlSeconds = 60;

export const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();
/** RFC 7636's S256: the challenge a PKCE verifier answers. */
const s256 = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');
const randomToken = () => randomBytes(32).toString('base64url');

/** What the application sends to start: where to come back, its own state, and its PKCE challenge (S256). */
export type Return = { redirectUri: string; state: string; codeChallenge: string };

/**
 * Records an attempt and gives the provider's authorization URL: a state, a nonce and a PKCE
 * verifier (S256) of the service's own, `scope=openid email`. `binding` ties the callback to the
 * browser that started it (a sign-in: the hash of its cookie) or to the session that asked (a link).
 */
export async function beginAttempt(
  deps: UseCaseDeps, providers: Providers, provider: OidcProvider, back: Return,
  binding: { browser: string } | { accountId: string; sessionId: string },
): Promise<string> {
  const { authorizationEndpoint } = await providers.metadata(provider);
  const state = randomToken();
  const nonce = randomToken();
  const verifier = randomToken();
  const stateHash = sha256(state);
  const attempt: Attempt = {
    provider: provider.name, nonce, redirectUri: back.redirectUri, clientState: back.state,
    codeChallenge: back.codeChallenge,
    verifier: deps.sealer.seal(Buffer.from(verifier), 'oidc', stateHash.toString('hex')),
    browserHash: 'browser' in binding ? sha256(binding.browser) : null,
    accountId: 'browser' in binding ? null : binding.accountId,
    sessionId: 'browser' in binding ? null : binding.sessionId,
  };
  const now = deps.clock();
  await insertAttempt(deps.sql, stateHash, attempt, new Date(now.getTime() + attemptTtlSeconds * 1000));
  const url = new URL(authorizationEndpoint);
  // A link asks the provider to show its consent page even when the user consented before, so
  // that a link started by someone else is never completed by one silent redirect (OIDC Core §3.1.2.1).
  const query = {
    response_type: 'code', client_id: provider.clientId, redirect_uri: callbackUrl(providers, provider),
    scope: 'openid email', state, nonce, code_challenge: s256(verifier), code_challenge_method: 'S256',
    ...('browser' in binding ? {} : { prompt: 'consent' }),
  };
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.toString();
}

export type Callback =
  /** No live attempt of this provider has this state, or it was started in another browser: answered 400. */
  | { outcome: 'unknown' }
  /** Back to the application: `code` (ours) or `error`, with its state and our issuer (RFC 9207). */
  | { outcome: 'redirect'; location: string };

/**
 * The provider's answer, checked in this order: the attempt (live, unused, this browser's or a
 * link's), `state` (the attempt is found by its hash), `iss` (required when the provider's
 * metadata says it sends it), `error`, the code's exchange with the verifier, and the ID token
 * (provider.ts verifyIdToken). The attempt is used up once it is known to be this browser's.
 * Then a code of ours goes back to the application; an identity that no account has is
 * refused alike whether its address has an account, and that account's owner is mailed.
 */
export async function completeAttempt(
  deps: UseCaseDeps, providers: Providers, provider: OidcProvider, query: URLSearchParams, browser: string | null,
): Promise<Callback> {
  const state = query.get('state') ?? '';
  const now = deps.clock();
  const stateHash = sha256(state);
  const wellFormed = state.length > 0 && state.length <= 100;
  const attempt = wellFormed ? await findAttempt(deps.sql, stateHash, provider.name, now) : null;
  if (attempt === null) return { outcome: 'unknown' };
  if (attempt.browserHash !== null && (browser === null || !equalSecrets(sha256(browser), attempt.browserHash))) {
    return { outcome: 'unknown' };
  }
  if (!(await spendAttempt(deps.sql, stateHash))) return { outcome: 'unknown' };
  const back = (params: Record<string, string>) => {
    const url = new URL(attempt.redirectUri);
    const all = { ...params, state: attempt.clientState, iss: deps.config.tokenIssuer };
    for (const [name, value] of Object.entries(all)) {
      url.searchParams.set(name, value);
    }
    return { outcome: 'redirect', location: url.toString() } as const;
  };
  const refuse = (reason: string, error = 'access_denied') => {
    deps.log.warn(`OpenID provider ${provider.name}: sign-in refused`, { reason });
    return back({ error, error_description: 'The provider\'s answer was not accepted.' });
  };
  try {
    const metadata = await providers.metadata(provider);
    const iss = query.get('iss');
    if (iss !== null ? iss !== provider.issuer : metadata.sendsIss) return refuse('iss is not the provider\'s');
    const error = query.get('error');
    if (error !== null) {
      const known = ['access_denied', 'login_required', 'consent_required', 'interaction_required'];
      return refuse(`the provider answered ${error.slice(0, 64)}`, known.includes(error) ? error : 'access_denied');
    }
    const code = query.get('code');
    if (code === null || code.length === 0 || code.length > 2048) return refuse('no code', 'invalid_request');
    const verifier = deps.sealer.open(attempt.verifier, 'oidc', stateHash.toString('hex'));
    if (verifier === null) return refuse('the verifier does not open');
    const idToken = await exchangeCode(providers, provider, code, verifier.plaintext.toString());
    const verified = await verifyIdToken(providers, provider, idToken, attempt.nonce, now);
    if ('reason' in verified) return refuse(verified.reason);
    const { subject, email, emailVerified } = verified.identity;
    // An identity that no account has gets a code all the same (the token endpoint says so, and
    // it may make an account), alike whatever its address holds; that address's owner is told.
    const linked = attempt.accountId === null ? await findLinkedAccount(deps.sql, provider.issuer, subject) : null;
    const unknown = attempt.accountId === null && linked === null;
    // Only an address the provider verified: anyone may claim any other.
    if (unknown && email !== null && emailVerified) await tellAddressOwner(deps, provider, email, now);
    const ours = randomToken();
    await insertGrant(deps.sql, sha256(ours), {
      provider: provider.name, issuer: provider.issuer, subject, email, emailVerified, redirectUri: attempt.redirectUri,
      codeChallenge: attempt.codeChallenge, accountId: attempt.accountId, sessionId: attempt.sessionId,
    }, new Date(now.getTime() + (unknown ? attemptTtlSeconds : codeTtlSeconds) * 1000));
    return back({ code: ours });
  } catch (error) {
    if (!(error instanceof ProviderFailure)) throw error;
    return refuse(error.reason, 'temporarily_unavailable');
  }
}

/** At most a few a day per account (the 'identity-notice' quota), so that a stranger cannot flood a mailbox. */
async function tellAddressOwner(deps: UseCaseDeps, provider: OidcProvider, email: string, now: Date): Promise<void> {
  const owner = await findAddressOwner(deps.sql, email);
  if (owner === null) return;
  const sent = await inTransaction(deps.sql, async (tx) => {
    const refusal = await reserveAddressRequest(tx, 'identity-notice', accountQuotaKey(deps.keys, owner.publicId), now);
    if (refusal !== null) return false;
    await enqueueMail(tx, identityUnknownMail(owner, provider.name, now), deps.mailer, now);
    return true;
  });
  if (sent) deps.outbox.wake();
}

/** RFC 7636 §4.6: the verifier's S256 hash is the challenge the application sent at the start. */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return equalSecrets(s256(verifier), challenge);
}

/**
 * The authorization_code grant: a sign-in code of the callback, its redirect_uri and the PKCE
 * verifier start a session. The provider stands in for the password, not for the second factor:
 * with a factor on and no otp, 'mfa-required' and the code stays usable for the same request with
 * one. Anything else wrong uses the code up.
 */
export async function signInWithCode(
  deps: UseCaseDeps, code: string, redirectUri: string, verifier: string, otp: string | undefined, client: Client,
  takeAllowance: (accountId: string) => number,
): Promise<SignIn | { outcome: 'unknown-identity' }> {
  const now = deps.clock();
  const codeHash = sha256(code);
  const grant = await findGrant(deps.sql, codeHash, now);
  if (grant === null || grant.accountId !== null) return { outcome: 'refused' };
  const account = await findLinkedAccount(deps.sql, grant.issuer, grant.subject);
  const fits = grant.redirectUri === redirectUri && verifierMatches(verifier, grant.codeChallenge);
  // The code stays usable for POST /acc/reg/oidc, which may make an account of the identity.
  if (fits && account === null) return { outcome: 'unknown-identity' };
  if (!fits || account === null) {
    await spendGrant(deps.sql, codeHash);
    return { outcome: 'refused' };
  }
  const factor = await checkSecondFactor(deps, account, otp);
  if (factor.outcome === 'missing') return { outcome: 'mfa-required' };
  if (factor.outcome === 'throttled') return factor;
  if (factor.outcome === 'wrong') {
    await spendGrant(deps.sql, codeHash);
    return { outcome: 'refused' };
  }
  if (account.disabled === true) return { outcome: 'disabled' };
  const wait = takeAllowance(account.id);
  if (wait > 0) return { outcome: 'limited', retryAfterSeconds: wait };
  const proof = factor.outcome === 'passed' ? factor.proof : null;
  const { refreshTtlSeconds, sessionsPerAccount } = deps.config;
  type Started = SessionTokens | 'disabled' | null;
  const started = await inTransaction<Started>(deps.sql, async (tx, rollBack) => {
    if (!(await spendGrant(tx, codeHash))) return null;
    const session = await startSession(
      tx, account.id, account.passwordHash, null, client, now, refreshTtlSeconds, sessionsPerAccount,
    );
    if (session === null || session === 'disabled') return rollBack(session);
    const used = await useSecondFactor(tx, deps, account, proof, client.address, session.sessionId, now);
    if (!used) return rollBack(null);
    await touchIdentity(tx, account.identityId, now);
    return session;
  });
  if (started === null) return { outcome: 'refused' };
  if (started === 'disabled') return { outcome: 'disabled' };
  await deps.announceSignIn(account.id, client, 'provider');
  if (proof?.kind === 'recovery') deps.outbox.wake();
  return { outcome: 'signed-in', accountPublicId: account.publicId, ...started };
}
