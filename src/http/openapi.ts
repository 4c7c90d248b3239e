import { problems, problemTypePrefix } from './errors.ts';
import type { Route } from './router.ts';
import {
  accountDeletionSchema, activationSchema, emailChangeRequestSchema, emailChangeSchema, localeSchema,
  passkeyAdditionSchema, passkeyOptionsSchema, passkeyRemovalSchema, passkeyRenameSchema, passwordChangeSchema,
  passwordResetSchema, registrationSchema, resetCodeRequestSchema, totpConfirmationSchema, totpEnrollmentSchema,
  totpRemovalSchema, patterns,
} from '../core/fields.ts';
import type { Schema } from './validate.ts';
import { license } from '../support/version.ts';

type JsonObject = Record<string, unknown>;

/** Request bodies by the name a route's `doc.request` gives. */
const requestSchemas: Record<string, JsonObject> = {
  RegistrationRequest: objectSchema(registrationSchema),
  ActivationRequest: objectSchema(activationSchema),
  ResetCodeRequest: objectSchema(resetCodeRequestSchema),
  PasswordResetRequest: objectSchema(passwordResetSchema),
  PasswordChangeRequest: objectSchema(passwordChangeSchema),
  AccountDeletionRequest: objectSchema(accountDeletionSchema),
  TotpEnrollmentRequest: objectSchema(totpEnrollmentSchema),
  TotpConfirmationRequest: objectSchema(totpConfirmationSchema),
  TotpRemovalRequest: objectSchema(totpRemovalSchema),
  EmailChangeRequest: objectSchema(emailChangeRequestSchema),
  EmailChangeConfirmation: objectSchema(emailChangeSchema),
  PasskeyOptionsRequest: objectSchema(passkeyOptionsSchema),
  PasskeyAdditionRequest: withCredential(
    objectSchema(passkeyAdditionSchema), 'RegistrationResponseJSON (WebAuthn Level 3), as the browser made it.',
  ),
  PasskeyRenameRequest: objectSchema(passkeyRenameSchema),
  LocaleRequest: objectSchema(localeSchema),
  PasskeyRemovalRequest: objectSchema(passkeyRemovalSchema),
  TokenRequest: {
    oneOf: [
      {
        type: 'object',
        required: ['grant_type', 'username', 'password'],
        properties: {
          grant_type: { const: 'password' },
          username: {
            type: 'string', minLength: 1, maxLength: 254, description: "The account's name or e-mail address.",
          },
          password: { type: 'string', minLength: 1, maxLength: 256 },
          otp: {
            type: 'string',
            pattern: unicodeSafePattern(patterns.otp.source),
            description:
              'Required when the account has an active second factor: a 6-digit TOTP code or an unused recovery ' +
              'code. Without it such an account answers mfa_required once the password is right.',
          },
        },
      },
      objectOf({
        grant_type: { const: 'refresh_token' }, refresh_token: { type: 'string', minLength: 1, maxLength: 256 },
      }),
      objectOf({
        grant_type: { const: 'urn:account-service:grant-type:passkey' },
        challenge_id: { type: 'string', maxLength: 200, description: 'From POST /auth/passkey/options; used once.' },
        credential: {
          type: ['object', 'string'],
          description: 'The AuthenticationResponseJSON: an object in a JSON body, a JSON string in a form body.',
        },
      }),
    ],
  },
  RevocationRequest: {
    type: 'object',
    required: ['token'],
    properties: {
      token: {
        type: 'string', minLength: 1, maxLength: 4096,
        description: 'A refresh or access token; its session is revoked.',
      },
      token_type_hint: { type: 'string', description: 'refresh_token or access_token; only a hint, both are tried.' },
    },
  },
};

/** RFC 9457 problems, as http/server.ts answers them (the admin API's document has them too). */
export const problemSchema: JsonObject = {
  type: 'object',
  required: ['type', 'title', 'status'],
  properties: {
    // An open string, not an enum: a client generated from this document must not break when a type is added.
    type: {
      type: 'string',
      description: 'A stable URI to branch on; more may be added.',
      examples: Object.values(problems).map((problem) => problemTypePrefix + problem.slug),
    },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    'invalid-params': { type: 'array', items: objectOf({ name: { type: 'string' }, reason: { type: 'string' } }) },
  },
};

const responseSchemas: Record<string, JsonObject> = {
  Token: objectOf({
    access_token: {
      type: 'string',
      description:
        'A JWT, HS256 or (TOKEN_ALG=ES256) ES256 with a kid, with iss, aud (when configured), ' +
        'sub, sid, jti, iat and exp.',
    },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer' },
    refresh_token: {
      type: 'string',
      description:
        'Opaque; single use: each refresh returns the next one. Presented again within 10 s while its successor is ' +
        'unused, it counts as a retry and is answered again; later, it ends the session.',
    },
  }),
  Sessions: objectOf({
    sessions: {
      type: 'array',
      items: objectOf({
        id: { type: 'string', format: 'uuid' },
        created_at: { type: 'string', format: 'date-time' },
        last_used_at: { type: 'string', format: 'date-time', description: 'The last sign-in or refresh.' },
        client_address: { type: 'string' },
        user_agent: { type: 'string', maxLength: 200 },
        current: { type: 'boolean', description: "True for the session of the token used for this request." },
      }),
    },
  }),
  Account: objectOf({
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    email: { type: 'string' },
    phone: { type: ['string', 'null'] },
    locale: {
      type: ['string', 'null'], description: "The BCP 47 locale of the account's mail; null: the service's default.",
    },
    created_at: { type: 'string', format: 'date-time' },
    totp_enabled: { type: 'boolean', description: 'Whether a second factor is active.' },
  }),
  TotpEnrollment: objectOf({
    secret: {
      type: 'string', pattern: '^[A-Z2-7]{32}$',
      description: 'The 160-bit TOTP secret in base32 (RFC 4648, no padding).',
    },
    uri: {
      type: 'string',
      description: 'otpauth://totp/<issuer>:<name>?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30, for a QR code.',
    },
  }),
  RecoveryCodes: objectOf({
    recovery_codes: {
      type: 'array',
      minItems: 10,
      maxItems: 10,
      items: { type: 'string', pattern: '^[a-z2-7]{4}(-[a-z2-7]{4}){3}$' },
      description: 'Ten single-use codes (80 bits each), shown this once; each works as otp in place of a TOTP code.',
    },
  }),
  Status: objectOf({ status: { type: 'string' } }),
  PasskeyOptions: objectOf({
    challenge_id: {
      type: 'string', description: 'Sent back with the response; the challenge lasts 5 minutes and is used once.',
    },
    options: {
      type: 'object',
      description:
        'PublicKeyCredentialCreationOptionsJSON or PublicKeyCredentialRequestOptionsJSON, ' +
        'for PublicKeyCredential.parse…OptionsFromJSON.',
    },
  }),
  Passkey: passkeySchema(),
  Passkeys: objectOf({ passkeys: { type: 'array', maxItems: 20, items: passkeySchema() } }),
  Events: objectOf({
    events: {
      type: 'array',
      maxItems: 50,
      items: objectOf({
        type: {
          type: 'string',
          description:
            'An open set; known values: activated, signed-in, sign-in-failed, password-changed, reset-requested, ' +
            'password-reset, session-revoked, signed-out-everywhere, refresh-retried, refresh-token-reused, ' +
            'session-evicted (a sign-in beyond SESSIONS_PER_ACCOUNT ended it), totp-enabled, totp-disabled, ' +
            'recovery-code-used, email-change-requested, email-changed, passkey-added, passkey-removed, ' +
            'passkey-renamed, passkey-counter-regressed, and the operator events account-disabled, account-enabled, ' +
            'sessions-ended, reset-forced, throttle-cleared.',
        },
        occurred_at: { type: 'string', format: 'date-time' },
        actor: {
          enum: ['client', 'operator'],
          description: 'client: the client of a request, from client_address; operator: an operator (no reason).',
        },
        client_address: { type: ['string', 'null'], description: 'The address of the client; null for an operator.' },
        session_id: { type: ['string', 'null'], format: 'uuid' },
      }),
    },
  }),
  AuthorizationServerMetadata: withOptional(objectOf({
    issuer: { type: 'string', format: 'uri', description: 'TOKEN_ISSUER, the iss of every token.' },
    token_endpoint: { type: 'string', format: 'uri' },
    revocation_endpoint: { type: 'string', format: 'uri' },
    grant_types_supported: { type: 'array', items: { type: 'string' } },
    token_endpoint_auth_methods_supported: { type: 'array', items: { type: 'string' } },
    revocation_endpoint_auth_methods_supported: { type: 'array', items: { type: 'string' } },
    response_types_supported: {
      type: 'array', items: { type: 'string' }, description: 'Empty: there is no authorization endpoint.',
    },
    jwks_uri: { type: 'string', format: 'uri', description: 'With TOKEN_ALG=ES256 only: where the public keys are.' },
  }), ['jwks_uri']),
  WebauthnOrigins: objectOf({
    origins: {
      type: 'array', items: { type: 'string' },
      description: 'Exact origins (scheme, host and port) of the pages that create and use passkeys.',
    },
  }),
  JsonWebKeySet: objectOf({
    keys: {
      type: 'array',
      items: objectOf({
        kty: { const: 'EC' },
        crv: { const: 'P-256' },
        x: { type: 'string' },
        y: { type: 'string' },
        kid: { type: 'string', description: 'The RFC 7638 thumbprint of the key; the kid of the tokens it signs.' },
        alg: { const: 'ES256' },
        use: { const: 'sig' },
      }),
    },
  }),
  Empty: { type: 'object', additionalProperties: false, description: 'An empty JSON object.' },
  Problem: problemSchema,
  OAuthError: objectOf({
    error: {
      enum: [
        'invalid_request', 'invalid_grant', 'mfa_required', 'account_disabled', 'unsupported_grant_type',
        'temporarily_unavailable', 'server_error',
      ],
    },
    error_description: { type: 'string' },
  }),
};

/** Response headers, referred to by the responses that carry them. */
export const headers: Record<string, JsonObject> = {
  'X-Request-Id': header(
    "The request's own X-Request-Id when it is well-formed, else a generated one; " +
      'the log line of the request carries it.',
    { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  ),
  'Retry-After': header('Seconds to wait before trying again.', { type: 'integer', minimum: 0 }),
  'WWW-Authenticate': header(
    'Bearer realm="accounts" (RFC 6750), with error="invalid_token" when a token was sent.', { type: 'string' },
  ),
  Allow: header('The methods this path serves.', { type: 'string' }),
};

/** A response header; every one listed here is always sent with the responses that refer to it. */
function header(description: string, schema: JsonObject): JsonObject {
  return { required: true, description, schema };
}

/** An OpenAPI 3.1 document made from the route table itself, so that the two cannot drift apart. */
export function buildOpenApiDocument(routes: readonly Route[], version: string): JsonObject {
  const paths: Record<string, JsonObject> = {};
  for (const route of routes) {
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation(route) };
  }
  const tags = [...new Set(routes.map((route) => tagOf(route.path)))];
  return {
    openapi: '3.1.0',
    info: documentInfo(
      'Account service',
      version,
      'Two-step registration, password reset by e-mailed code, sessions with bearer and refresh tokens, ' +
        'password change, and a TOTP second factor with recovery codes. Unknown paths answer 404 and known ' +
        'paths with another method 405, both as problems.',
    ),
    servers: [{ url: '/', description: 'The service that serves this document' }],
    tags: tags.map((name) => ({ name, description: tagDescriptions[name] ?? `The operations under /${name}/.` })),
    paths,
    components: {
      schemas: { ...requestSchemas, ...responseSchemas },
      headers,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
  };
}

/** The `info` of this document and of the admin API's (features/operators/api-document.ts). */
export function documentInfo(title: string, version: string, description: string): JsonObject {
  return {
    title,
    version,
    description,
    // The document is served by each deployment, so its contact is whoever runs that one.
    contact: { name: 'The operator of this deployment' },
    // SPDX has no identifier for "no licence granted"; a LicenseRef- identifier is SPDX's form for
    // a licence of one's own.
    license: { name: license, identifier: license === 'UNLICENSED' ? 'LicenseRef-UNLICENSED' : license },
  };
}

/**
 * Each operation's tag comes from its path, so that a new route is tagged without a word more in
 * the route table: the first segment of a longer path, else `service` (health, metrics, this
 * document). Known tags have a description here; another gets a generic one.
 */
function tagOf(path: string): string {
  const segments = path.split('/').slice(1);
  return segments.length > 1 ? tagNames[segments[0]!] ?? segments[0]! : 'service';
}

const tagNames: Record<string, string> = { acc: 'accounts', auth: 'oauth', '.well-known': 'discovery' };
const tagDescriptions: Record<string, string> = {
  accounts:
    'Registration, password reset and change, the signed-in account, its sessions and its security events (/acc/).',
  oauth: 'OAuth 2.0 token and revocation endpoints (/auth/).',
  discovery: 'Metadata for OAuth clients (/.well-known/).',
  service: 'Health, readiness, metrics and this document.',
};

/** What an operation says beyond its summary: how to authenticate and in which shape errors come. */
function operationDescription(route: Route): string {
  const auth = route.doc.auth === true
    ? 'Needs a bearer access token (Authorization: Bearer ...).'
    : 'Needs no authentication.';
  const errors = route.errorFormat === 'oauth'
    ? 'Errors are RFC 6749 section 5.2 JSON objects.'
    : 'Errors are RFC 9457 problems (application/problem+json).';
  return `${route.doc.summary}. ${auth} ${errors}`;
}

function operation(route: Route): JsonObject {
  const { doc } = route;
  const responses: Record<string, JsonObject> = { [doc.success.status]: successResponse(route) };
  if (doc.accepted !== undefined) {
    responses[doc.accepted.status] = { description: doc.accepted.description, headers: headerRefs('X-Request-Id') };
  }
  for (const status of doc.errors) responses[status] = errorResponse(route, status);
  // Every path answers its other methods 405, and that is each operation's one certain 4xx.
  responses[405] = errorResponse({ ...route, errorFormat: undefined }, 405);
  return {
    operationId: route.handler.name,
    summary: doc.summary,
    description: operationDescription(route),
    tags: [tagOf(route.path)],
    security: doc.auth === true ? [{ bearer: [] }] : [],
    ...(pathParameters(route.path).length === 0 ? {} : { parameters: pathParameters(route.path) }),
    ...(doc.request === undefined ? {} : { requestBody: requestBody(doc.request) }),
    responses,
  };
}

function pathParameters(path: string): JsonObject[] {
  return [...path.matchAll(/\{([a-z]+)\}/g)].map((match) =>
    ({ name: match[1], in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }));
}

function requestBody(name: string): JsonObject {
  const schema = { $ref: `#/components/schemas/${name}` };
  const content: JsonObject = { 'application/json': { schema } };
  if (name === 'TokenRequest' || name === 'RevocationRequest') {
    content['application/x-www-form-urlencoded'] = { schema };
  }
  return { required: true, content };
}

function successResponse(route: Route): JsonObject {
  const { status, schema, contentType = 'application/json' } = route.doc.success;
  const base = { headers: headerRefs('X-Request-Id') };
  if (schema === undefined) return { description: status === 204 ? 'Done; no body.' : 'OK', ...base };
  const reference = schema === 'any' ? {} : { $ref: `#/components/schemas/${schema}` };
  return { description: 'OK', ...base, content: { [contentType]: { schema: reference } } };
}

function errorResponse(route: Route, status: number): JsonObject {
  const extraHeaders: Record<number, string[]> = {
    429: ['Retry-After'], 503: ['Retry-After'], 401: ['WWW-Authenticate'], 405: ['Allow'],
  };
  const extra = extraHeaders[status] ?? [];
  const headers = headerRefs('X-Request-Id', ...extra);
  if (route.errorFormat === 'oauth') {
    const schema = { $ref: '#/components/schemas/OAuthError' };
    return { description: `RFC 6749 §5.2 error (${status}).`, headers, content: { 'application/json': { schema } } };
  }
  const types = Object.values(problems)
    .filter((problem) => problem.status === status)
    .map((problem) => problemTypePrefix + problem.slug);
  return {
    description: `RFC 9457 problem: ${types.join(', ')}.`,
    headers,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

export function headerRefs(...names: string[]): JsonObject {
  return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
}

/** An object whose every property is required: the list is made from the properties, so that the two cannot drift. */
export function objectOf(properties: Record<string, JsonObject>): JsonObject {
  return { type: 'object', required: Object.keys(properties), properties };
}

function passkeySchema(): JsonObject {
  return objectOf({
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    last_used_at: { type: ['string', 'null'], format: 'date-time' },
    backed_up: { type: 'boolean', description: 'The BS flag last seen: the passkey is synced to other devices.' },
    transports: { type: 'array', items: { type: 'string' } },
  });
}

function withCredential(schema: JsonObject, description: string): JsonObject {
  const properties = { ...(schema.properties as JsonObject), credential: { type: 'object', description } };
  return { ...schema, required: [...(schema.required as string[]), 'credential'], properties };
}

function withOptional(schema: JsonObject, optional: string[]): JsonObject {
  return { ...schema, required: (schema.required as string[]).filter((name) => !optional.includes(name)) };
}

/** A JSON Schema for a validation schema: the spec's patterns, required fields, no others. */
function objectSchema(schema: Schema): JsonObject {
  const properties = Object.fromEntries(
    Object.entries(schema).map(([name, rule]) => {
      const type = rule.nullable ? ['string', 'null'] : 'string';
      return [name, { type, pattern: unicodeSafePattern(rule.pattern.source) }];
    }),
  );
  const required = Object.entries(schema).filter(([, rule]) => rule.required).map(([name]) => name);
  return { type: 'object', additionalProperties: false, required, properties };
}

/**
 * A pattern as JSON Schema validators compile it, with the `u` flag (Ajv, Prism), which refuses
 * escapes of characters that need none, such as the spec's `\@`. Dropping those backslashes
 * keeps the meaning in both modes; the service itself still validates with the spec's regex.
 */
export function unicodeSafePattern(source: string): string {
  const meaningful = /[A-Za-z0-9\\^$.*+?()[\]{}|/-]/;
  return source.replace(/\\(.)/g, (escape, char: string) => (meaningful.test(char) ? escape : char));
}
