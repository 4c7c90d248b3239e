import { problems, problemTypePrefix } from '../http/errors.ts';
import { documentInfo, headerRefs, headers, objectOf, problemSchema } from '../openapi.ts';
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
  return {
    openapi: '3.1.0',
    info: documentInfo(
      'Account service admin API',
      version,
      "The operator's operations, as the `admin` command runs them, on the listener of ADMIN_PORT only. Every call needs Authorization: Bearer <ADMIN_TOKEN>. An account is named by its name, its address or its id.",
    ),
    servers: [{ url: '/', description: 'The admin listener that serves this document' }],
    security: [{ bearer: [] }],
    tags: Object.entries(tagDescriptions).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: { ...results, Problem: problemSchema },
      headers: { ...headers, 'WWW-Authenticate': { ...headers['WWW-Authenticate'], description: 'Bearer realm="admin" (RFC 6750).' } },
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

function adminOperation(operation: Operation): JsonObject {
  const command = `admin ${operation.words.join(' ')}`;
  const responses: Record<string, JsonObject> = { 200: success(resultName(operation)) };
  for (const status of [...errorStatuses(operation), 405]) responses[status] = problem(status);
  const query = operation.method === 'GET' ? operation.options.map((name) => ({ name, in: 'query', required: false, schema: optionSchemas[name] })) : [];
  const target = operation.path.includes('{target}') ? [{ name: 'target', in: 'path', required: true, description: 'The account: its name, its address or its id (%-escaped).', schema: { type: 'string', minLength: 1, maxLength: 254 } }] : [];
  const fields = operation.method === 'GET' ? [] : [...operation.options, ...(operation.words.at(-1) === 'retry' ? ['id'] : [])];
  return {
    operationId: pascal(operation.words).replace(/^./, (letter) => letter.toLowerCase()),
    summary: operation.summary,
    description: `The same as \`${command}\`. Errors are RFC 9457 problems (application/problem+json).`,
    tags: [operation.words.length > 1 ? operation.words[0] : 'accounts'],
    ...(query.length + target.length === 0 ? {} : { parameters: [...target, ...query] }),
    ...(fields.length === 0 ? {} : { requestBody: requestBody(fields, operation.required ?? []) }),
    responses,
  };
}

/** The statuses an operation answers besides 200 (and 405): its route's `doc.errors` (api.ts). */
export function errorStatuses(operation: Operation): number[] {
  const named = operation.path.includes('{target}') || operation.words.at(-1) === 'retry';
  return [400, 401, ...(named ? [404] : []), ...(operation.method === 'GET' ? [] : [413, 415]), 500, 503];
}

function documentOperation(): JsonObject {
  return { operationId: 'getAdminDocument', summary: 'This document', description: 'The OpenAPI document of the admin API.', tags: ['service'], responses: { 200: { description: 'OK', headers: headerRefs('X-Request-Id'), content: { 'application/json': { schema: { type: 'object' } } } }, 401: problem(401), 405: problem(405) } };
}

function requestBody(fields: string[], required: string[]): JsonObject {
  const schema = { type: 'object', additionalProperties: false, required, properties: Object.fromEntries(fields.map((name) => [name, optionSchemas[name]])) };
  return { required: required.length > 0, content: { 'application/json': { schema } } };
}

function success(schema: string): JsonObject {
  return { description: 'OK', headers: headerRefs('X-Request-Id'), content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } };
}

function problem(status: number): JsonObject {
  const types = Object.values(problems).filter((known) => known.status === status && adminProblems.includes(known.slug)).map((known) => problemTypePrefix + known.slug);
  const extra = status === 503 ? ['Retry-After'] : status === 401 ? ['WWW-Authenticate'] : status === 405 ? ['Allow'] : [];
  return { description: `RFC 9457 problem: ${types.join(', ')}.`, headers: headerRefs('X-Request-Id', ...extra), content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
}

/** The problem types the admin listener answers with. */
const adminProblems: string[] = ['malformed-body', 'invalid-fields', 'invalid-token', 'not-found', 'method-not-allowed', 'body-too-large', 'unsupported-media-type', 'internal', 'unavailable', 'overloaded'];

const optionSchemas: Record<string, JsonObject> = {
  reason: { type: 'string', minLength: 1, maxLength: 500, description: 'Why: recorded with the event and sent with the webhook.' },
  limit: { type: 'integer', minimum: 1, maximum: maxPageSize, description: `The page size (default 50, at most ${maxPageSize}).` },
  cursor: { type: 'string', format: 'uuid', description: 'The `next` of the previous page.' },
  status: { type: 'string', enum: ['active', 'disabled'] },
  'created-after': { type: 'string', description: 'A date (2026-01-31) or a time with its zone (2026-01-31T10:00:00Z).' },
  'created-before': { type: 'string', description: 'A date (2026-01-31) or a time with its zone (2026-01-31T10:00:00Z).' },
  'all-failed': { type: 'boolean', description: 'Every failed entry; instead of id.' },
  id: { type: 'string', pattern: '^[1-9][0-9]{0,17}$', description: 'The failed entry (its id in list-failed); instead of all-failed.' },
};

const text = { type: 'string' };
const count = { type: 'integer', minimum: 0 };
const time = { type: 'string', format: 'date-time' };
const orNull = (schema: JsonObject): JsonObject => ({ ...schema, type: [schema.type, 'null'] });
const named = (properties: Record<string, JsonObject>) => objectOf({ account: { type: 'string', description: 'The account as the path named it.' }, ...properties });
const retried = objectOf({ retried: { type: 'array', items: text, description: 'The ids queued again.' } });
const failed = (properties: Record<string, JsonObject>) => objectOf({ failed: { type: 'array', maxItems: maxPageSize, items: objectOf({ id: text, ...properties, attempts: count, last_error: orNull(text), created_at: time }) } });
const summary = { id: { type: 'string', format: 'uuid' }, name: text, email: text };

/** Each operation's answer, by the name resultName gives it. */
const results: Record<string, JsonObject> = {
  FindResult: objectOf({
    ...summary,
    phone: orNull(text),
    status: { enum: ['active', 'disabled'] },
    created_at: time,
    disabled_at: orNull(time),
    disabled_reason: orNull(text),
    last_sign_in_at: orNull(time),
    second_factor: { type: 'boolean' },
    live_sessions: count,
    throttle: objectOf({ budget_left: orNull(count), blocked_networks: count, blocked_until: orNull(time) }),
  }),
  ListResult: objectOf({
    accounts: { type: 'array', maxItems: maxPageSize, items: objectOf({ ...summary, status: { enum: ['active', 'disabled'] }, created_at: time, disabled_reason: orNull(text) }) },
    next: { type: ['string', 'null'], format: 'uuid', description: 'The cursor of the next page; null on the last.' },
  }),
  DisableResult: named({ changed: { type: 'boolean', description: 'False when it was disabled already.' }, ended: count }),
  EnableResult: named({ changed: { type: 'boolean', description: 'False when it was not disabled.' } }),
  EndSessionsResult: named({ ended: count }),
  ResetResult: named({}),
  UnlockResult: named({ matched_account: { type: 'boolean', description: 'False: the identifier names no account; its throttle was cleared all the same.' } }),
  RemoveSecondFactorResult: named({ removed: { type: 'boolean' } }),
  DeleteResult: named({}),
  EventsResult: objectOf({
    events: { type: 'array', maxItems: maxPageSize, items: objectOf({ type: text, occurred_at: time, client_address: text, session_id: orNull({ type: 'string', format: 'uuid' }), actor: { enum: ['client', 'operator'] }, reason: orNull(text) }) },
  }),
  OutboxListFailedResult: failed({ kind: text }),
  OutboxRetryResult: retried,
  WebhooksListFailedResult: failed({ webhook_id: text, type: text, account: { type: 'string', format: 'uuid' } }),
  WebhooksRetryResult: retried,
};

const resultName = (operation: Operation) => `${pascal(operation.words)}Result`;
/** `outbox list-failed`: OutboxListFailed. */
const pascal = (words: string[]) => words.map((word) => word.replaceAll(/(?:^|-)(\w)/g, (_, letter: string) => letter.toUpperCase())).join('');
