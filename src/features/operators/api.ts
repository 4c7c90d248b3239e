import { createHash } from 'node:crypto';
import { equalSecrets } from '../../core/constant-time.ts';
import { bearerToken } from '../../core/auth.ts';
import { readJsonObject } from '../../http/body.ts';
import { HttpError, invalidFields, problems } from '../../http/errors.ts';
import type { Deps, Handler, RequestContext, Route } from '../../http/router.ts';
import { clientNetwork, createRateLimiter, type RateLimiter } from '../../http/rate-limit.ts';
import { accountPublicId } from './reads.ts';
import { fitDocument, readApiDocument } from '../../http/api-document.ts';
import { ArgumentError, type Args } from './arguments.ts';
import { operations, type Operation } from './operations.ts';

/**
 * The admin API: the operations of the command (operations.ts) as JSON, on a listener of its
 * own (service.ts, ADMIN_PORT), for ADMIN_TOKEN only. A path's `{target}` is the operand, and
 * the options come from the query (GET) or a JSON body (POST, DELETE), named as the command
 * names them; an operation without an operand in its path takes its entry's `id` there.
 */
export function adminRoutes(token: string, version: string): Route[] {
  const read = readApiDocument('admin-openapi.json');
  const expected = digest(token);
  const refusals = createRateLimiter(refusalsPerMinute);
  const authorize: Authorize = (ctx, deps) => authorizeOrRefuse(ctx, deps, expected, refusals);
  let document: unknown = null;
  const getAdminDocument: Handler = async (ctx, deps) => {
    authorize(ctx, deps);
    return { status: 200, body: document };
  };
  const documentRoute: Route = { method: 'GET', path: '/openapi.json', handler: getAdminDocument };
  const routes = [...operations.map((operation) => operationRoute(operation, authorize)), documentRoute];
  const fitted = fitDocument(read, routes);
  document = { ...fitted.document, info: { ...fitted.document.info, version } };
  return fitted.routes;
}

type Authorize = (ctx: RequestContext, deps: Deps) => void;

/** Refused tokens a client network may send a minute before it is answered 429. */
export const refusalsPerMinute = 10;

function operationRoute(operation: Operation, authorize: Authorize): Route {
  const name = operation.words.join(' ');
  const handler: Handler = async (ctx, deps) => {
    authorize(ctx, deps);
    const args = await readArgs(ctx, operation);
    // An account by its public id, looked up before the operation (which may delete it): never the name or
    // address that the operator gave, which the log does not keep. Other operands (a failed entry's id) as given.
    const subject = operation.path.includes('{target}')
      ? { account: await accountPublicId(deps, args.target) }
      : { target: args.target };
    const logged = { request_id: ctx.requestId, operation: name, ...subject };
    let result;
    try {
      result = await operation.run(deps, args, ctx.clientAddress);
    } catch (error) {
      if (!(error instanceof ArgumentError)) throw error;
      deps.log.info('operator action', { ...logged, outcome: 'refused' });
      // The command's messages name options as flags; here they are fields.
      throw new HttpError(problems.invalidFields, { detail: error.message.replaceAll('--', '') });
    }
    // Who acted on what, and how it ended; the token and the reason stay out of the log.
    deps.log.info('operator action', { ...logged, outcome: result.outcome });
    if (result.outcome === 'not-found') throw new HttpError(problems.notFound, { detail: result.message });
    return { status: 200, body: result.body };
  };
  return { method: operation.method, path: operation.path, handler, logTemplate: true };
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Compared as SHA-256 digests in constant time, so that neither the token's length nor its content leaks. A refusal
 * is logged with the client address (never the token) and counted against the client's network: past
 * refusalsPerMinute it is answered 429, unlogged, until the network's allowance refills. The right token is always
 * taken: it has at least 32 characters (config.ts), so the count bounds the log and the work, not guessing.
 */
function authorizeOrRefuse(ctx: RequestContext, deps: Deps, expected: Buffer, refusals: RateLimiter): void {
  // Two Authorization headers are refused, as the public API refuses them (core/auth.ts).
  const headers = ctx.req.headersDistinct.authorization;
  const given = headers?.length === 1 ? bearerToken(headers[0]) : null;
  if (given !== null && equalSecrets(digest(given), expected)) return;
  const wait = refusals.take(clientNetwork(ctx.clientAddress), Date.now());
  if (wait > 0) throw new HttpError(problems.rateLimited, { headers: { 'Retry-After': String(wait) } });
  deps.log.warn('admin token refused', { request_id: ctx.requestId, client_address: ctx.clientAddress });
  const detail = 'The admin API answers Authorization: Bearer <ADMIN_TOKEN> only.';
  throw new HttpError(problems.invalidToken, { detail, headers: { 'WWW-Authenticate': 'Bearer realm="admin"' } });
}

/** The operand and options of a request: text, or true for a flag (false and null leave it out); nothing else. */
async function readArgs(ctx: RequestContext, operation: Operation): Promise<Args> {
  const query = () => {
    const parameters = new URL(ctx.req.url ?? '/', 'http://admin').searchParams;
    const names = [...parameters.keys()];
    const repeated = names.find((name, index) => names.indexOf(name) !== index);
    if (repeated !== undefined) throw invalidFields([{ name: repeated, reason: 'is given more than once' }]);
    return Object.fromEntries(parameters);
  };
  const given: Record<string, unknown> = operation.method === 'GET' ? query() : await readOptionalBody(ctx);
  const options: Args['options'] = {};
  for (const [name, value] of Object.entries(given)) {
    if (value === true || typeof value === 'string') options[name] = value;
    else if (value !== false && value !== null) throw invalidFields([{ name, reason: 'must be text, or true' }]);
  }
  if (operation.path.includes('{target}')) return { target: decodeSegment(ctx.params.target!), options };
  const { id, ...rest } = options;
  return { target: id === undefined ? null : String(id), options: rest };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(problems.invalidFields, { detail: 'The account in the path is not validly %-escaped.' });
  }
}

/** A body is optional: a POST with none (`curl -X POST`) has no options. */
function readOptionalBody(ctx: RequestContext): Promise<Record<string, unknown>> {
  const { headers } = ctx.req;
  const sent = headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
  return sent ? readJsonObject(ctx.req) : Promise.resolve({});
}
