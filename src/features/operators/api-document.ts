import { problems, problemTypePrefix } from '../../http/errors.ts';
import { documentInfo, headerRefs, headers, objectOf, problemSchema } from '../../http/openapi.ts';
import { maxPageSize } from './arguments.ts';
import { operations, type Operation } from './operations.ts';

type JsonObject = Record<string, unknown>;

/**
 * The admin API's OpenAPI 3.1 document, made from the operations table (operations.ts) that the
 * command and the API share, so that the three cannot drift apart. The admin listener serves it
 * at GET /openapi.json; the public document never names an admin path.
 */
export function buildAdminDocument(version: string): JsonObject {
  const paths: Record<string, JsonObject> = { '/openapi.json': { get: documentOperation() } };
  for (const operation of operations) {
    paths[operation.path] = { ...paths[operation.path], [operation.method.toLowerCase()]: adminOperation(operation) };
  }
  const description =
    "The operator's operations, as the `admin` command runs them, on the listener of ADMIN_PORT only. " +
    'Every call needs Authorization: Bearer <ADMIN_TOKEN>. An account is named by its name, its address or its id.';
  const authenticate = { ...headers['WWW-Authenticate'], description: 'Bearer realm="admin" (RFC 6750).' };
  return {
    openapi: '3.1.0',
    info: documentInfo('Account service admin API', version, description),
    servers: [{ url: '/', description: 'The admin listener that serves this document' }],
    security: [{ bearer: [] }],
    tags: Object.entries(tagDescriptions).map(([name, text]) => ({ name, description: text })),
    paths,
    components: {
      schemas: { ...results, Problem: problemSchema },
      headers: { ...headers, 'WWW-Authenticate': authenticate },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN.' } },
    },
  };
}

const tagDescriptions: Record<string, string> = {
  accounts: 'Find, list and act on accounts; each action is a security event with actor operator, and a webhook.',
  outbox: 'Mail that failed: list it, queue it again.',
  webhooks: 'Webhook events that failed: list them, queue them again.',
  service: 'This document.',
};

const targetParameter = {
  name: 'target',
  in: 'path',
  required: true,
  description: 'The account: its name, its address or its id (%-escaped).',
  schema: { type: 'string', minLength: 1, maxLength: 254 },
};

function adminOperation(operation: Operation): JsonObject {
  const result = { $ref: `#/components/schemas/${pascal(operation.words)}Result` };
  const responses: Record<string, JsonObject> = { 200: success(result) };
  for (const status of [...errorStatuses(operation), 405]) responses[status] = problem(status);
  const reads = operation.method === 'GET';
  const query = reads ? operation.options.map((name) => ({ name, in: 'query', schema: optionSchemas[name] })) : [];
  const parameters = [...(operation.path.includes('{target}') ? [targetParameter] : []), ...query];
  const fields = reads ? [] : [...operation.options, ...(operation.words.at(-1) === 'retry' ? ['id'] : [])];
  return {
    operationId: pascal(operation.words).replace(/^./, (letter) => letter.toLowerCase()),
    summary: operation.summary,
    description: `The same as \`admin ${operation.words.join(' ')}\`. Errors are RFC 9457 problems.`,
    tags: [operation.words.length > 1 ? operation.words[0] : 'accounts'],
    ...(parameters.length === 0 ? {} : { parameters }),
    ...(fields.length === 0 ? {} : { requestBody: requestBody(fields, operation.required ?? []) }),
    responses,
  };
}

/** The statuses an operation answers besides 200 (and 405): its route's `doc.errors` (api.ts). */
export function errorStatuses(operation: Operation): number[] {
  const named = operation.path.includes('{target}') || operation.words.at(-1) === 'retry';
  return [400, 401, ...(named ? [404] : []), ...(operation.method === 'GET' ? [] : [413, 415]), 429, 500, 503];
}

function documentOperation(): JsonObject {
  const responses = { 200: success({ type: 'object' }), 401: problem(401), 405: problem(405), 429: problem(429) };
  const description = 'The OpenAPI document of the admin API.';
  return { operationId: 'getAdminDocument', summary: 'This document', description, tags: ['service'], responses };
}

function requestBody(fields: string[], required: string[]): JsonObject {
  const properties = Object.fromEntries(fields.map((name) => [name, optionSchemas[name]]));
  const schema = { type: 'object', additionalProperties: false, required, properties };
  return { required: required.length > 0, content: { 'application/json': { schema } } };
}

function success(schema: JsonObject): JsonObject {
  return { description: 'OK', headers: headerRefs('X-Request-Id'), content: { 'application/json': { schema } } };
}

/** The problem types the admin listener answers with. */
const adminProblems = [
  problems.malformedBody,
  problems.invalidFields,
  problems.invalidToken,
  problems.notFound,
  problems.methodNotAllowed,
  problems.bodyTooLarge,
  problems.unsupportedMediaType,
  problems.rateLimited,
  problems.internal,
  problems.unavailable,
  problems.overloaded,
];

const responseHeaders: Record<number, string[]> = {
  503: ['Retry-After'], 429: ['Retry-After'], 401: ['WWW-Authenticate'], 405: ['Allow'],
};

function problem(status: number): JsonObject {
  const types = adminProblems.filter((known) => known.status === status).map((known) => problemTypePrefix + known.slug);
  const extra = responseHeaders[status] ?? [];
  return {
    description: `RFC 9457 problem: ${types.join(', ')}.`,
    headers: headerRefs('X-Request-Id', ...extra),
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

const when = 'A date (2026-01-31) or a time with its zone (2026-01-31T10:00:00Z).';
const optionSchemas: Record<string, JsonObject> = {
  reason: { type: 'string', minLength: 1, maxLength: 500, description: 'Why; kept with the event and the webhook.' },
  limit: { type: 'integer', minimum: 1, maximum: maxPageSize, description: `The page size (default 50).` },
  cursor: { type: 'string', format: 'uuid', description: 'The `next` of the previous page.' },
  status: { type: 'string', enum: ['active', 'disabled'] },
  'created-after': { type: 'string', description: when },
  'created-before': { type: 'string', description: when },
  'all-failed': { type: 'boolean', description: 'Every failed entry; instead of id.' },
  id: { type: 'string', pattern: '^[1-9][0-9]{0,17}$', description: 'The failed entry (its id in list-failed).' },
};

const text = { type: 'string' };
const count = { type: 'integer', minimum: 0 };
const time = { type: 'string', format: 'date-time' };
const flag = (description?: string) => ({ type: 'boolean', ...(description === undefined ? {} : { description }) });
const orNull = (schema: JsonObject): JsonObject => ({ ...schema, type: [schema.type, 'null'] });
const list = (items: JsonObject) => ({ type: 'array', maxItems: maxPageSize, items });
const account = { type: 'string', description: 'The account as the path named it.' };
const named = (properties: Record<string, JsonObject>) => objectOf({ account, ...properties });
const retried = objectOf({ retried: { type: 'array', items: text, description: 'The ids queued again.' } });
const failed = (properties: Record<string, JsonObject>) => {
  const entry = objectOf({ id: text, ...properties, attempts: count, last_error: orNull(text), created_at: time });
  return objectOf({ failed: list(entry) });
};
const status = { enum: ['active', 'disabled'] };
const summary = { id: { type: 'string', format: 'uuid' }, name: text, email: text, status };

/** Each operation's answer, named after its words (`outbox list-failed`: OutboxListFailedResult). */
const results: Record<string, JsonObject> = {
  FindResult: objectOf({
    ...summary,
    created_at: time,
    phone: orNull(text),
    disabled_at: orNull(time),
    disabled_reason: orNull(text),
    last_sign_in_at: orNull(time),
    second_factor: flag(),
    live_sessions: count,
    passkeys: count,
    throttle: objectOf({ budget_left: orNull(count), blocked_networks: count, blocked_until: orNull(time) }),
  }),
  ListResult: objectOf({
    accounts: list(objectOf({ ...summary, created_at: time, disabled_reason: orNull(text) })),
    next: { type: ['string', 'null'], format: 'uuid', description: 'The cursor of the next page; null on the last.' },
  }),
  DisableResult: named({ changed: flag('False when it was disabled already.'), ended: count }),
  EnableResult: named({ changed: flag('False when it was not disabled.') }),
  EndSessionsResult: named({ ended: count }),
  ResetResult: named({ passkeys_removed: count, code_mailed: flag('False while the account is disabled.') }),
  UnlockResult: named({ matched_account: flag('False: it names no account; its throttle was cleared anyway.') }),
  RemoveSecondFactorResult: named({ removed: flag() }),
  DeleteResult: named({}),
  EventsResult: objectOf({
    events: list(objectOf({
      type: text,
      occurred_at: time,
      client_address: text,
      session_id: orNull({ type: 'string', format: 'uuid' }),
      actor: { enum: ['client', 'operator'] },
      reason: orNull(text),
    })),
  }),
  OutboxListFailedResult: failed({ kind: text }),
  OutboxRetryResult: retried,
  WebhooksListFailedResult: failed({ webhook_id: text, type: text, account: { type: 'string', format: 'uuid' } }),
  WebhooksRetryResult: retried,
};

/** `outbox list-failed`: OutboxListFailed. */
function pascal(words: string[]): string {
  return words.map((word) => word.replaceAll(/(?:^|-)(\w)/g, (_, letter: string) => letter.toUpperCase())).join('');
}
