import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { authenticate, callerRefusal, clientOf, signInAllowance, takeAccountAllowance } from '../../core/auth.ts';
import { patterns } from '../../core/fields.ts';
import { readValidBody } from '../../http/body.ts';
import { HttpError, invalidFields, OAuthError, problems, quotaRefused } from '../../http/errors.ts';
import { otpParameter, signInReply, stringParameter, type TokenGrant } from '../../http/oauth.ts';
import type { Deps, Handler, Reply, RequestContext } from '../../http/router.ts';
import { isUuid, validateFields } from '../../http/validate.ts';
import {
  back, identityRemovalSchema, linkOptionsSchema, linkSchema, providerName, registrationSchema,
} from './fields.ts';
import { isoUtc } from '../../support/format.ts';
import { completeLink, removeIdentity, startLink } from './link.ts';
import type { Providers } from './provider.ts';
import type { OidcProvider } from './settings.ts';
import { registerWithIdentity } from './register.ts';
import { beginAttempt, completeAttempt, signInWithCode } from './sign-in.ts';
import { listIdentities, type LinkedIdentity } from './store.ts';

/**
 * The routes of sign-in with an OpenID provider. They exist only while OIDC_PROVIDERS is set
 * (the wiring serves them then); a provider that is not configured is answered 404.
 */
/** The cookie that ties a sign-in's callback to the browser that started it. */
const cookieName = 'oidc_browser';

function providersOf(deps: Deps): Providers {
  if (deps.oidc === null) throw new HttpError(problems.notFound);
  return deps.oidc;
}

function providerOf(deps: Deps, name: string | undefined): { providers: Providers; provider: OidcProvider } {
  const providers = providersOf(deps);
  const provider = providers.find(name ?? '');
  if (provider === undefined) throw new HttpError(problems.notFound);
  return { providers, provider };
}

/** The redirect_uri, state and code_challenge of a start; an unlisted redirect_uri is 400, never a redirect. */
function readReturn(providers: Providers, values: Record<string, unknown>) {
  const { redirect_uri, state, code_challenge } = values;
  const { value, invalid } = validateFields({ redirect_uri, state, code_challenge }, back);
  if (invalid.length === 0 && !providers.settings.redirectUris.includes(value.redirect_uri)) {
    invalid.push({ name: 'redirect_uri', reason: back.redirect_uri.mismatch });
  }
  if (invalid.length > 0) throw invalidFields(invalid);
  return { redirectUri: value.redirect_uri, state: value.state, codeChallenge: value.code_challenge };
}

/** GET /auth/oidc/{name}?redirect_uri&state&code_challenge&code_challenge_method=S256: 302 to the provider. */
export const startSignInRoute: Handler = async (ctx, deps) => {
  const { providers, provider } = providerOf(deps, ctx.params.name);
  const query = Object.fromEntries(new URL(ctx.req.url ?? '/', 'http://x').searchParams);
  const values = readReturn(providers, query);
  if (query.code_challenge_method !== 'S256') {
    throw invalidFields([{ name: 'code_challenge_method', reason: 'must be S256' }]);
  }
  // Fresh for every start, whatever the browser sends: a value planted in it must not pass the check.
  const browser = randomBytes(32).toString('base64url');
  const location = await beginAttempt(deps, providers, provider, values, { browser });
  const secure = providers.settings.base.startsWith('https:') ? '; Secure' : '';
  const setCookie = `${cookieName}=${browser}; Path=/auth/oidc/; Max-Age=600; HttpOnly; SameSite=Lax${secure}`;
  return { status: 302, headers: { Location: location, 'Set-Cookie': setCookie } };
};

/** GET /auth/oidc/{name}/callback: the provider's answer; 302 to the application, or 400 for an unknown attempt. */
export const callbackRoute: Handler = async (ctx, deps) => {
  const { providers, provider } = providerOf(deps, ctx.params.name);
  const query = new URL(ctx.req.url ?? '/', 'http://x').searchParams;
  const result = await completeAttempt(deps, providers, provider, query, cookie(ctx.req, cookieName));
  if (result.outcome === 'unknown') throw new HttpError(problems.unknownAttempt);
  return { status: 302, headers: { Location: result.location } };
};

/**
 * POST /acc/me/identities/options `{provider, pwd, otp?, redirect_uri, state, code_challenge}`: a
 * code mailed to the account, and the provider's URL to open in the browser.
 */
export const linkOptionsRoute: Handler = async (ctx, deps) => {
  const providers = providersOf(deps);
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, linkOptionsSchema);
  const provider = providers.find(value.provider);
  if (provider === undefined) throw invalidFields([{ name: 'provider', reason: providerName.mismatch }]);
  const evidence = { password: value.pwd, otp: (value.otp as string | null) ?? undefined };
  const back = readReturn(providers, value);
  const result = await startLink(deps, providers, caller, provider, back, evidence, clientOf(ctx));
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  if (result.outcome !== 'started') throw callerRefusal(result);
  return { status: 200, body: { authorization_url: result.url } };
};

/** POST /acc/me/identities `{code, code_verifier, redirect_uri, email_code}`: links the callback's identity; 201. */
export const linkIdentityRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, linkSchema);
  const { code, code_verifier: verifier, redirect_uri: redirectUri, email_code: emailCode } = value;
  const result = await completeLink(deps, caller, { code, verifier, redirectUri, emailCode }, clientOf(ctx));
  if (result.outcome !== 'linked') {
    throw new HttpError(result.outcome === 'wrong-code' ? problems.wrongEmailCode : problems.invalidLink);
  }
  return { status: 201, body: identityBody(result.identity) };
};

/** GET /acc/me/identities: the account's identities, oldest first. */
export const listIdentitiesRoute: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  return { status: 200, body: { identities: (await listIdentities(deps.sql, account.id)).map(identityBody) } };
};

/** DELETE /acc/me/identities/{id} `{pwd}`: 204. */
export const removeIdentityRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, identityRemovalSchema);
  const id = ctx.params.id ?? '';
  const result = isUuid(id)
    ? await removeIdentity(deps, caller, id, value.pwd, clientOf(ctx))
    : ({ outcome: 'unknown' } as const);
  if (result.outcome === 'unknown') throw new HttpError(problems.unknownIdentity);
  if (result.outcome !== 'removed') throw callerRefusal(result);
  return { status: 204 };
};

/** POST /acc/reg/oidc `{code, code_verifier, redirect_uri, name}`: an account of a trusted provider's identity; 204. */
export const registerWithIdentityRoute: Handler = async (ctx, deps) => {
  const providers = providersOf(deps);
  const value = await readValidBody(ctx.req, registrationSchema);
  const { code, code_verifier: verifier, redirect_uri: redirectUri, name } = value;
  const result = await registerWithIdentity(deps, providers, { code, verifier, redirectUri, name }, clientOf(ctx));
  if (result.outcome === 'invalid') throw new HttpError(problems.invalidLink);
  if (result.outcome === 'name-taken') throw new HttpError(problems.nameTaken);
  if (result.outcome === 'untrusted') {
    const reason = 'names an identity whose provider is not trusted for addresses (OIDC_<NAME>_TRUST_EMAIL) or ' +
      'whose address it did not verify: register with a password, then link the provider';
    throw invalidFields([{ name: 'code', reason }]);
  }
  return { status: 204 };
};

function identityBody(identity: LinkedIdentity): Record<string, unknown> {
  const { id, provider, createdAt, lastUsedAt } = identity;
  return { id, provider, created_at: isoUtc(createdAt), last_used_at: lastUsedAt === null ? null : isoUtc(lastUsedAt) };
}

function cookie(req: IncomingMessage, name: string): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return null;
}

/**
 * The authorization_code grant of POST /auth/token: `code` from the callback, `redirect_uri` and
 * `code_verifier`; `otp` when the account has a second factor. Every refusal is invalid_grant.
 */
async function grantWithCode(ctx: RequestContext, deps: Deps, params: Record<string, unknown>): Promise<Reply> {
  const code = stringParameter(params, 'code', 64);
  const redirectUri = stringParameter(params, 'redirect_uri', 2048);
  const codeVerifier = stringParameter(params, 'code_verifier', 128);
  const otp = otpParameter(params, patterns.otp);
  const takeAllowance = (accountId: string) =>
    takeAccountAllowance(deps, signInAllowance(accountId, ctx.clientAddress));
  const result = await signInWithCode(deps, code, redirectUri, codeVerifier, otp, clientOf(ctx), takeAllowance);
  if (result.outcome === 'unknown-identity') {
    const description = 'No account is linked to this identity: sign in another way and link it; from a provider ' +
      'trusted for addresses, POST /acc/reg/oidc makes an account of it with this code.';
    throw new OAuthError('unknown_identity', description);
  }
  const refused = 'The code is unknown, expired, used, or not for this redirect_uri and code_verifier; or the otp is ' +
    'wrong, which uses the code up.';
  return signInReply(deps, result, refused);
}

export const authorizationCodeGrant: TokenGrant = { type: 'authorization_code', handle: grantWithCode };
