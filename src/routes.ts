import type { Route } from './http/router.ts';
import { activateAccountRoute } from './features/registration/activate-route.ts';
import { getAuthorizationServerMetadata } from './features/sessions/metadata-route.ts';
import { getJwks } from './features/sessions/jwks-route.ts';
import { getWebauthnOrigins } from './features/passkeys/origins-route.ts';
import { changePasswordRoute } from './features/password/change-route.ts';
import { setLocaleRoute } from './features/account/locale-route.ts';
import { getAccount } from './features/account/read-route.ts';
import { checkHealth, checkReadiness } from './http/health-route.ts';
import { issueToken } from './features/sessions/token-route.ts';
import { getMetrics } from './features/operators/metrics-route.ts';
import { getApiDocument } from './http/openapi-route.ts';
import { requestRegistrationCodeRoute } from './features/registration/request-code-route.ts';
import { requestResetCodeRoute } from './features/password/request-reset-route.ts';
import { revokeTokenRoute } from './features/sessions/revoke-token-route.ts';
import { getSessions } from './features/sessions/list-route.ts';
import { getEvents } from './features/account/events-route.ts';
import { deleteAccountRoute } from './features/account/delete-route.ts';
import { revokeSession } from './features/sessions/revoke-session-route.ts';
import { revokeAllSessions } from './features/sessions/revoke-all-route.ts';
import { resetPasswordRoute } from './features/password/reset-route.ts';
import { enrollSecondFactor } from './features/second-factor/enroll-route.ts';
import { confirmSecondFactor } from './features/second-factor/confirm-route.ts';
import { disableSecondFactor } from './features/second-factor/remove-route.ts';
import { requestEmailChangeRoute as emailChangeRoute } from './features/email-change/request-route.ts';
import { changeEmailRoute } from './features/email-change/confirm-route.ts';
import {
  callbackRoute, linkIdentityRoute, linkOptionsRoute, listIdentitiesRoute,
  registerWithIdentityRoute, removeIdentityRoute, startSignInRoute,
} from './features/oidc/routes.ts';
import { exportAccountRoute } from './features/export/routes.ts';
import { requestSignInCodeRoute } from './features/email-code/routes.ts';
import { getNoticesRoute, setNoticesRoute } from './features/sign-in-notices/routes.ts';
import {
  addPasskeyRoute, listPasskeysRoute, passkeyRegistrationOptionsRoute as passkeyOptionsRoute, passkeySignInOptionsRoute,
  removePasskeyRoute, renamePasskeyRoute,
} from './features/passkeys/routes.ts';

/**
 * Every route of the service. A route that needs a bearer token names its act in the proof table
 * (core/proofs.ts), which says what else it needs; a route of an optional feature names it, and
 * is served only while FEATURES has it on. What each answers is in the API document
 * (api/openapi.json), which test/openapi.test.ts holds to this table and to every answer.
 */
/** The routes of an optional feature, each marked with it. */
const of = (feature: string, list: Route[]): Route[] => list.map((route) => ({ ...route, feature }));

export const routes: readonly Route[] = [
  { method: 'POST', path: '/acc/reg/code', handler: requestRegistrationCodeRoute, rateLimited: true },
  { method: 'POST', path: '/acc/reg', handler: activateAccountRoute, rateLimited: true },
  { method: 'POST', path: '/acc/pwd/code', handler: requestResetCodeRoute, rateLimited: true },
  { method: 'POST', path: '/acc/pwd', handler: resetPasswordRoute, rateLimited: true },
  { method: 'PUT', path: '/acc/me/pwd', handler: changePasswordRoute, act: 'change-password' },
  { method: 'PUT', path: '/acc/me/locale', handler: setLocaleRoute, act: 'set-locale' },
  { method: 'GET', path: '/acc/me', handler: getAccount, act: 'read-account' },
  { method: 'POST', path: '/auth/token', handler: issueToken, rateLimited: true, errorFormat: 'oauth' },
  { method: 'POST', path: '/auth/revoke', handler: revokeTokenRoute, rateLimited: true, errorFormat: 'oauth' },
  { method: 'DELETE', path: '/acc/me', handler: deleteAccountRoute, act: 'delete-account' },
  { method: 'GET', path: '/acc/me/events', handler: getEvents, act: 'list-events' },
  { method: 'GET', path: '/acc/me/sessions', handler: getSessions, act: 'list-sessions' },
  { method: 'DELETE', path: '/acc/me/sessions', handler: revokeAllSessions, act: 'end-every-session' },
  { method: 'DELETE', path: '/acc/me/sessions/{id}', handler: revokeSession, act: 'end-session' },
  { method: 'GET', path: '/healthz', handler: checkHealth },
  { method: 'GET', path: '/readyz', handler: checkReadiness },
  { method: 'GET', path: '/.well-known/oauth-authorization-server', handler: getAuthorizationServerMetadata },
  { method: 'GET', path: '/.well-known/jwks.json', handler: getJwks },
  { method: 'GET', path: '/openapi.json', handler: getApiDocument },
  { method: 'GET', path: '/metrics', handler: getMetrics },
  ...of('email-change', [
    { method: 'POST', path: '/acc/me/email', handler: emailChangeRoute, act: 'change-address', rateLimited: true },
    { method: 'POST', path: '/acc/email', handler: changeEmailRoute, rateLimited: true },
  ]),
  ...of('second-factor', [
    { method: 'POST', path: '/acc/me/totp', handler: enrollSecondFactor, act: 'enable-second-factor' },
    { method: 'POST', path: '/acc/me/totp/confirm', handler: confirmSecondFactor, act: 'enable-second-factor' },
    { method: 'DELETE', path: '/acc/me/totp', handler: disableSecondFactor, act: 'disable-second-factor' },
  ]),
  ...of('passkeys', [
    { method: 'POST', path: '/acc/me/passkeys/options', handler: passkeyOptionsRoute, act: 'add-passkey' },
    { method: 'POST', path: '/acc/me/passkeys', handler: addPasskeyRoute, act: 'add-passkey' },
    { method: 'GET', path: '/acc/me/passkeys', handler: listPasskeysRoute, act: 'list-passkeys' },
    { method: 'PATCH', path: '/acc/me/passkeys/{id}', handler: renamePasskeyRoute, act: 'rename-passkey' },
    { method: 'DELETE', path: '/acc/me/passkeys/{id}', handler: removePasskeyRoute, act: 'remove-passkey' },
    { method: 'POST', path: '/auth/passkey/options', handler: passkeySignInOptionsRoute, rateLimited: true },
    { method: 'GET', path: '/.well-known/webauthn', handler: getWebauthnOrigins },
  ]),
  ...of('sign-in-notices', [
    { method: 'GET', path: '/acc/me/notices', handler: getNoticesRoute, act: 'read-account' },
    { method: 'PUT', path: '/acc/me/notices', handler: setNoticesRoute, act: 'set-notices' },
  ]),
  ...of('email-code', [
    { method: 'POST', path: '/auth/code', handler: requestSignInCodeRoute, rateLimited: true },
  ]),
  ...of('export', [
    { method: 'POST', path: '/acc/me/export', handler: exportAccountRoute, act: 'export-account' },
  ]),
  ...of('oidc', [
    { method: 'GET', path: '/auth/oidc/{name}', handler: startSignInRoute, rateLimited: true },
    { method: 'GET', path: '/auth/oidc/{name}/callback', handler: callbackRoute },
    { method: 'POST', path: '/acc/me/identities/options', handler: linkOptionsRoute, act: 'link-identity' },
    { method: 'POST', path: '/acc/me/identities', handler: linkIdentityRoute, act: 'link-identity' },
    { method: 'GET', path: '/acc/me/identities', handler: listIdentitiesRoute, act: 'list-identities' },
    { method: 'DELETE', path: '/acc/me/identities/{id}', handler: removeIdentityRoute, act: 'unlink-identity' },
    { method: 'POST', path: '/acc/reg/oidc', handler: registerWithIdentityRoute, rateLimited: true },
  ]),
];
