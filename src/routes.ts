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
import { requestEmailChangeRoute } from './features/email-change/request-route.ts';
import { changeEmailRoute } from './features/email-change/confirm-route.ts';
import {
  addPasskeyRoute, listPasskeysRoute, passkeyRegistrationOptionsRoute, passkeySignInOptionsRoute, removePasskeyRoute,
  renamePasskeyRoute,
} from './features/passkeys/routes.ts';

/** Every route, with what the API document says of it. Error statuses are all those the route can answer. */
export const routes: readonly Route[] = [
  {
    method: 'POST',
    path: '/acc/reg/code',
    handler: requestRegistrationCodeRoute,
    rateLimited: true,
    doc: {
      summary: 'Request a registration code by e-mail', request: 'RegistrationRequest', success: { status: 204 },
      errors: [400, 409, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/reg',
    handler: activateAccountRoute,
    rateLimited: true,
    doc: {
      summary: 'Activate the account with its registration code', request: 'ActivationRequest',
      success: { status: 204 }, errors: [400, 404, 410, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/pwd/code',
    handler: requestResetCodeRoute,
    rateLimited: true,
    doc: {
      summary: 'Request a password reset code by e-mail', request: 'ResetCodeRequest', success: { status: 204 },
      errors: [400, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/pwd',
    handler: resetPasswordRoute,
    rateLimited: true,
    doc: {
      summary: 'Set a new password with a reset code', request: 'PasswordResetRequest', success: { status: 204 },
      errors: [400, 404, 410, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'PUT',
    path: '/acc/me/pwd',
    handler: changePasswordRoute,
    doc: {
      summary: 'Change the password of the signed-in account', auth: true, request: 'PasswordChangeRequest',
      success: { status: 204 }, errors: [400, 401, 403, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'PUT',
    path: '/acc/me/locale',
    handler: setLocaleRoute,
    doc: {
      summary: "Set the locale of the account's mail (null: the service's default)", auth: true,
      request: 'LocaleRequest', success: { status: 204 }, errors: [400, 401, 413, 415, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/me/email',
    handler: requestEmailChangeRoute,
    rateLimited: true,
    doc: {
      summary: 'Ask to change the e-mail address: a code goes to the new address, a notice to the current one',
      auth: true,
      request: 'EmailChangeRequest',
      success: { status: 204 },
      errors: [400, 401, 403, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/email',
    handler: changeEmailRoute,
    rateLimited: true,
    doc: {
      summary: 'Confirm an e-mail address change with the code sent to the new address',
      request: 'EmailChangeConfirmation', success: { status: 204 },
      errors: [400, 404, 409, 410, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'GET',
    path: '/acc/me',
    handler: getAccount,
    doc: {
      summary: 'Read the signed-in account', auth: true, success: { status: 200, schema: 'Account' },
      errors: [401, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/auth/token',
    handler: issueToken,
    rateLimited: true,
    errorFormat: 'oauth',
    doc: {
      summary: 'Sign in, or refresh a session (OAuth 2.0 password and refresh_token grants)', request: 'TokenRequest',
      success: { status: 200, schema: 'Token' }, errors: [400, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/auth/revoke',
    handler: revokeTokenRoute,
    rateLimited: true,
    errorFormat: 'oauth',
    doc: {
      summary: 'Revoke the session of a refresh or access token (RFC 7009)', request: 'RevocationRequest',
      success: { status: 200, schema: 'Empty' }, errors: [400, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'DELETE',
    path: '/acc/me',
    handler: deleteAccountRoute,
    doc: {
      summary: 'Delete the signed-in account and everything of it, with a code mailed to its address',
      auth: true, request: 'AccountDeletionRequest', success: { status: 204 },
      accepted: { status: 202, description: 'A code was mailed to the account\'s address; send it as email_code.' },
      errors: [400, 401, 403, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/me/totp',
    handler: enrollSecondFactor,
    doc: {
      summary: 'Start enrolling a TOTP factor and mail the account a code (pending until confirmed; again replaces it)',
      auth: true, request: 'TotpEnrollmentRequest', success: { status: 200, schema: 'TotpEnrollment' },
      errors: [400, 401, 403, 409, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/me/totp/confirm',
    handler: confirmSecondFactor,
    doc: {
      summary: 'Activate the pending factor with a code and the mailed email_code; ends other sessions',
      auth: true, request: 'TotpConfirmationRequest', success: { status: 200, schema: 'RecoveryCodes' },
      errors: [400, 401, 403, 409, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'DELETE',
    path: '/acc/me/totp',
    handler: disableSecondFactor,
    doc: {
      summary: 'Disable the second factor (password and otp required)', auth: true, request: 'TotpRemovalRequest',
      success: { status: 204 }, errors: [400, 401, 403, 409, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/me/passkeys/options',
    handler: passkeyRegistrationOptionsRoute,
    doc: {
      summary:
        'Start adding a passkey: creation options (PublicKeyCredentialCreationOptionsJSON), ' +
        'and a code mailed to the account',
      auth: true,
      request: 'PasskeyOptionsRequest',
      success: { status: 200, schema: 'PasskeyOptions' },
      errors: [400, 401, 403, 404, 409, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/acc/me/passkeys',
    handler: addPasskeyRoute,
    doc: {
      summary: 'Add a passkey: the RegistrationResponseJSON, its challenge_id and the e-mailed code',
      auth: true,
      request: 'PasskeyAdditionRequest',
      success: { status: 201, schema: 'Passkey' },
      errors: [400, 401, 403, 404, 409, 413, 415, 500, 503],
    },
  },
  {
    method: 'GET',
    path: '/acc/me/passkeys',
    handler: listPasskeysRoute,
    doc: {
      summary: "List the account's passkeys", auth: true, success: { status: 200, schema: 'Passkeys' },
      errors: [401, 404, 500, 503],
    },
  },
  {
    method: 'PATCH',
    path: '/acc/me/passkeys/{id}',
    handler: renamePasskeyRoute,
    doc: {
      summary: 'Rename a passkey', auth: true, request: 'PasskeyRenameRequest',
      success: { status: 200, schema: 'Passkey' }, errors: [400, 401, 404, 413, 415, 500, 503],
    },
  },
  {
    method: 'DELETE',
    path: '/acc/me/passkeys/{id}',
    handler: removePasskeyRoute,
    doc: {
      summary: 'Remove a passkey (password required)', auth: true, request: 'PasskeyRemovalRequest',
      success: { status: 204 }, errors: [400, 401, 403, 404, 413, 415, 429, 500, 503],
    },
  },
  {
    method: 'POST',
    path: '/auth/passkey/options',
    handler: passkeySignInOptionsRoute,
    rateLimited: true,
    doc: {
      summary:
        'Start a passkey sign-in: request options (PublicKeyCredentialRequestOptionsJSON) for any discoverable passkey',
      success: { status: 200, schema: 'PasskeyOptions' },
      errors: [404, 429, 500, 503],
    },
  },
  {
    method: 'GET',
    path: '/acc/me/events',
    handler: getEvents,
    doc: {
      summary: "The account's latest 50 security events, newest first", auth: true,
      success: { status: 200, schema: 'Events' }, errors: [401, 500, 503],
    },
  },
  {
    method: 'GET',
    path: '/acc/me/sessions',
    handler: getSessions,
    doc: {
      summary: "List the account's live sessions", auth: true, success: { status: 200, schema: 'Sessions' },
      errors: [401, 429, 500, 503],
    },
  },
  {
    method: 'DELETE',
    path: '/acc/me/sessions',
    handler: revokeAllSessions,
    doc: {
      summary: 'Sign out everywhere: revoke every session of the account', auth: true, success: { status: 204 },
      errors: [401, 500, 503],
    },
  },
  {
    method: 'DELETE',
    path: '/acc/me/sessions/{id}',
    handler: revokeSession,
    doc: {
      summary: 'Revoke one session of the account', auth: true, success: { status: 204 }, errors: [401, 404, 500, 503],
    },
  },
  {
    method: 'GET', path: '/healthz', handler: checkHealth,
    doc: { summary: 'Liveness: the process serves', success: { status: 200, schema: 'Status' }, errors: [500] },
  },
  {
    method: 'GET',
    path: '/readyz',
    handler: checkReadiness,
    doc: {
      summary: 'Readiness: the database answers and is migrated', success: { status: 200, schema: 'Status' },
      errors: [500, 503],
    },
  },
  {
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    handler: getAuthorizationServerMetadata,
    doc: {
      summary:
        'OAuth 2.0 authorization server metadata (RFC 8414), when TOKEN_ISSUER is the public URL of this service',
      success: { status: 200, schema: 'AuthorizationServerMetadata' },
      errors: [404, 500],
    },
  },
  {
    method: 'GET',
    path: '/.well-known/jwks.json',
    handler: getJwks,
    doc: {
      summary: 'The public keys that verify access tokens (RFC 7517), when TOKEN_ALG is ES256',
      success: { status: 200, schema: 'JsonWebKeySet' }, errors: [404, 500],
    },
  },
  {
    method: 'GET',
    path: '/.well-known/webauthn',
    handler: getWebauthnOrigins,
    doc: {
      summary: 'The origins whose pages may use the passkeys of this relying party (WEBAUTHN_ORIGINS)',
      success: { status: 200, schema: 'WebauthnOrigins' }, errors: [404, 500],
    },
  },
  {
    method: 'GET', path: '/openapi.json', handler: getApiDocument,
    doc: { summary: 'This document', success: { status: 200, schema: 'any' }, errors: [500] },
  },
  {
    method: 'GET',
    path: '/metrics',
    handler: getMetrics,
    doc: {
      summary: 'Metrics in the Prometheus text format',
      success: { status: 200, schema: 'any', contentType: 'text/plain' }, errors: [401, 500],
    },
  },
];
