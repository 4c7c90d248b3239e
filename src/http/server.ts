import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { OverloadedError } from '../concurrency.ts';
import { isDatabaseUnavailable } from '../storage/db.ts';
import { describeError } from '../log.ts';
import { clientAddress } from './client-address.ts';
import { corsHeaders, preflightReply } from './cors.ts';
import { HttpError, OAuthError, problemBody, problems } from './errors.ts';
import { matchRoute, type Deps, type Reply, type Route } from './router.ts';

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/** Timeouts against slow clients: a client that trickles headers or a body cannot hold a socket for long. */
export type ServerTimeouts = { headersTimeout: number; requestTimeout: number; keepAliveTimeout: number };
export const defaultTimeouts: ServerTimeouts = { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000 };

export function createServer(deps: Deps, routes: readonly Route[], timeouts: ServerTimeouts = defaultTimeouts): Server {
  // Node checks the header and request timeouts on this interval; its default of 30 s would let them overrun.
  const connectionsCheckingInterval = Math.min(1_000, timeouts.headersTimeout);
  const server = createHttpServer({ ...timeouts, connectionsCheckingInterval }, (req, res) => {
    void handleRequest(req, res, deps, routes);
  });
  server.keepAliveTimeout = timeouts.keepAliveTimeout;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => refuseUnparsed(error, socket, deps));
  return server;
}

/**
 * A request the HTTP parser refused (a malformed request line, headers too large, too slow)
 * never reaches a handler; it is answered, logged and counted here like any other. Only the
 * parser's error code is logged: the bytes the client sent may hold anything.
 */
function refuseUnparsed(error: NodeJS.ErrnoException, socket: Duplex, deps: Deps): void {
  // A client that hung up, or a socket already answered: nothing to answer, nothing refused.
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const requestId = randomUUID();
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\nX-Request-Id: ${requestId}\r\n\r\n`);
  deps.metrics.observe('OTHER', 'unparsed', status, 0);
  deps.log.info('request refused by the HTTP parser', { request_id: requestId, status, reason: error.code ?? 'unknown', client: (socket as Socket).remoteAddress ?? 'unknown' });
}

async function handleRequest(req: IncomingMessage, res: ServerResponse, deps: Deps, routes: readonly Route[]): Promise<void> {
  const started = performance.now();
  const header = req.headers['x-request-id'];
  const requestId = typeof header === 'string' && requestIdPattern.test(header) ? header : randomUUID();
  // Only the path is logged: a query string may carry something secret.
  const path = (req.url ?? '/').split('?')[0]!.slice(0, 256);
  const address = clientAddress(req, deps.config.trustProxy);
  let route: Route | null = null;
  let reply: Reply;
  try {
    const match = matchRoute(routes, req.method ?? '', path);
    if (match === null) throw new HttpError(problems.notFound);
    if ('allow' in match) {
      const preflight = preflightReply(req, deps.config.corsOrigins, match.allow);
      if (preflight !== null) return finish(preflight);
      throw new HttpError(problems.methodNotAllowed, { headers: { Allow: match.allow.join(', ') } });
    }
    route = match.route;
    if (route.rateLimited === true && deps.rateLimiter !== null) {
      const wait = deps.rateLimiter.take(address, Date.now());
      if (wait > 0) throw new HttpError(problems.rateLimited, { headers: { 'Retry-After': String(wait) } });
    }
    reply = await route.handler({ req, requestId, clientAddress: address, params: match.params }, deps);
  } catch (error) {
    reply = errorReply(error, deps, requestId, route?.errorFormat ?? 'problem');
  }
  // The API document lists every status a route answers; a gap is a documentation bug worth a warning.
  if (route !== null && reply.status !== route.doc.success.status && !route.doc.errors.includes(reply.status)) {
    deps.log.warn('undocumented status', { request_id: requestId, method: req.method, path, status: reply.status });
  }
  finish({ ...reply, headers: { ...corsHeaders(req, deps.config.corsOrigins), ...reply.headers } });

  function finish(final: Reply): void {
    send(req, res, requestId, final);
    const ms = performance.now() - started;
    deps.metrics.observe(req.method ?? '', route?.path ?? 'unmatched', final.status, ms / 1000);
    deps.log.info('request', { request_id: requestId, method: req.method, path, status: final.status, ms: Math.round(ms * 10) / 10 });
  }
}

/** The one place where errors become responses, and the only place unknown errors are logged. */
function errorReply(error: unknown, deps: Deps, requestId: string, format: 'problem' | 'oauth'): Reply {
  if (error instanceof OAuthError) {
    return { status: 400, body: { error: error.code, error_description: error.message } };
  }
  const httpError = toHttpError(error, deps, requestId);
  return format === 'oauth' ? oauthReply(httpError) : problemReply(httpError);
}

function toHttpError(error: unknown, deps: Deps, requestId: string): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof OverloadedError) {
    return new HttpError(problems.overloaded, { detail: 'Too many password operations are waiting; try again shortly.', headers: { 'Retry-After': '1' } });
  }
  if (isDatabaseUnavailable(error)) {
    // Once the breaker is open (DATABASE_DOWN), it has said so once; a line per request would flood the log.
    if ((error as { code?: unknown }).code !== 'DATABASE_DOWN') deps.log.warn('database unavailable', { request_id: requestId, ...describeError(error) });
    deps.noteDatabaseFailure(error);
    return new HttpError(problems.unavailable, { detail: 'The database is unavailable; try again shortly.', headers: { 'Retry-After': '5' } });
  }
  // Logged with the request id so an operator can find it; the client learns nothing more.
  deps.log.error('unexpected error', { request_id: requestId, ...describeError(error) });
  return new HttpError(problems.internal);
}

function problemReply(error: HttpError): Reply {
  return { status: error.problem.status, body: problemBody(error), headers: { ...error.headers, 'Content-Type': 'application/problem+json' } };
}

/** The token endpoint keeps the HTTP status but answers in the RFC 6749 §5.2 shape that OAuth clients parse. */
function oauthReply(error: HttpError): Reply {
  const { status } = error.problem;
  const code = status === 429 || status === 503 ? 'temporarily_unavailable' : status >= 500 ? 'server_error' : 'invalid_request';
  return { status, body: { error: code, error_description: error.detail ?? error.problem.title }, headers: error.headers };
}

function send(req: IncomingMessage, res: ServerResponse, requestId: string, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  res.statusCode = reply.status;
  res.setHeader('X-Request-Id', requestId);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  // A body left unread (too large, or refused before reading) is not drained: the connection closes instead.
  if (hasUnreadBody(req)) res.setHeader('Connection', 'close');
  if (reply.body === undefined) {
    res.end();
    return;
  }
  if (typeof reply.body === 'string') {
    res.end(reply.body);
    return;
  }
  if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(reply.body));
}

function hasUnreadBody(req: IncomingMessage): boolean {
  return !req.complete && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0);
}
