import { randomUUID } from 'node:crypto';
import {
  createServer as createHttpServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { OverloadedError } from '../support/concurrency.ts';
import { busyReason, isDatabaseUnavailable, poolerHint } from '../storage/database-errors.ts';
import { describeError } from '../telemetry/log.ts';
import { clientNetwork } from './rate-limit.ts';
import { corsHeaders, preflightReply } from './cors.ts';
import { HttpError, OAuthError, problemType, problems, type Problem } from './errors.ts';
import { createRouter, type Deps, type Reply, type Route, type Router } from './router.ts';

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/** Timeouts against slow clients: a client that trickles headers or a body cannot hold a socket for long. */
export type ServerTimeouts = { headersTimeout: number; requestTimeout: number; keepAliveTimeout: number };
export const defaultTimeouts: ServerTimeouts = {
  headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000,
};

export function createServer(deps: Deps, routes: readonly Route[], timeouts: ServerTimeouts = defaultTimeouts): Server {
  // Node checks the header and request timeouts on this interval; its default of 30 s would let them overrun.
  const connectionsCheckingInterval = Math.min(1_000, timeouts.headersTimeout);
  const router = createRouter(routes);
  const server = createHttpServer({ ...timeouts, connectionsCheckingInterval }, (req, res) => {
    void handleRequest(req, res, deps, router);
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
  // The headers every answer carries (server.ts), so that a refusal is cached and sniffed no more than the rest.
  const headers = [
    'Connection: close', 'Content-Length: 0', 'Cache-Control: no-store', 'X-Content-Type-Options: nosniff',
    `X-Request-Id: ${requestId}`,
  ];
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${headers.join('\r\n')}\r\n\r\n`);
  deps.metrics.observe('OTHER', 'unparsed', status, 0);
  const client = (socket as Socket).remoteAddress ?? 'unknown';
  const reason = error.code ?? 'unknown';
  deps.log.info('request refused by the HTTP parser', { request_id: requestId, status, reason, client });
}

async function handleRequest(req: IncomingMessage, res: ServerResponse, deps: Deps, router: Router): Promise<void> {
  const started = performance.now();
  const header = req.headers['x-request-id'];
  const requestId = typeof header === 'string' && requestIdPattern.test(header) ? header : randomUUID();
  let path = loggedPath(req.url ?? '/');
  const address = deps.clientAddressOf(req);
  let route: Route | null = null;
  let reply: Reply;
  try {
    const match = router.match(req.method ?? '', path);
    if (match === null) throw new HttpError(problems.notFound);
    if ('allow' in match) {
      const preflight = preflightReply(req, deps.config.corsOrigins, match.allow);
      if (preflight !== null) return finish(req, res, deps, requestId, path, null, started, preflight);
      throw new HttpError(problems.methodNotAllowed, { headers: { Allow: match.allow.join(', ') } });
    }
    route = match.route;
    if (route.logTemplate === true) path = route.path;
    if (route.rateLimited === true && deps.rateLimiter !== null) {
      const wait = deps.rateLimiter.take(clientNetwork(address), Date.now());
      if (wait > 0) throw new HttpError(problems.rateLimited, { headers: { 'Retry-After': String(wait) } });
    }
    reply = await route.handler({ req, requestId, clientAddress: address, params: match.params }, deps);
  } catch (error) {
    reply = errorReply(error, deps, requestId, route?.errorFormat ?? 'problem');
  }
  // The API document lists every status a route answers; a gap is a documentation bug worth a warning.
  if (route?.statuses !== undefined && !route.statuses.includes(reply.status)) {
    deps.log.warn('undocumented status', { request_id: requestId, method: req.method, path, status: reply.status });
  }
  finish(req, res, deps, requestId, path, route, started, reply);
}

/** Only the path is logged: a query string may carry something secret. */
function loggedPath(url: string): string {
  const query = url.indexOf('?');
  return (query === -1 ? url : url.slice(0, query)).slice(0, 256);
}

function finish(
  req: IncomingMessage, res: ServerResponse, deps: Deps, requestId: string, path: string, route: Route | null,
  started: number, reply: Reply,
): void {
  send(req, res, deps, requestId, reply);
  const ms = performance.now() - started;
  deps.metrics.observe(req.method ?? '', route?.path ?? 'unmatched', reply.status, ms / 1000);
  deps.log.request({ requestId, method: req.method ?? '', path, status: reply.status, ms: Math.round(ms * 10) / 10 });
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
    return retryLater(problems.overloaded, 'Too many password operations are waiting', 1);
  }
  const hint = poolerHint(error);
  if (hint !== null) {
    // A setup error, not an outage: said in one line, answered at once, the breaker left alone;
    // a missing prepared statement has the pools stop preparing statements (storage/db.ts).
    deps.log.error(hint, { request_id: requestId });
    deps.noteDatabaseFailure(error);
    return retryLater(problems.unavailable, 'The database is unavailable', 5);
  }
  const busy = busyReason(error);
  if (busy !== null) {
    deps.log.warn('database busy', { request_id: requestId, code: (error as { code: string }).code, reason: busy });
    return retryLater(problems.overloaded, 'The database is busy', 1);
  }
  if (isDatabaseUnavailable(error)) {
    // Once the breaker is open (DATABASE_DOWN), it has said so once; a line per request would flood the log.
    if ((error as { code?: unknown }).code !== 'DATABASE_DOWN') {
      deps.log.warn('database unavailable', { request_id: requestId, ...describeError(error) });
    }
    deps.noteDatabaseFailure(error);
    return retryLater(problems.unavailable, 'The database is unavailable', 5);
  }
  // Logged with the request id so an operator can find it; the client learns nothing more.
  deps.log.error('unexpected error', { request_id: requestId, ...describeError(error) });
  return new HttpError(problems.internal);
}

function retryLater(problem: Problem, reason: string, seconds: number): HttpError {
  const headers = { 'Retry-After': String(seconds) };
  return new HttpError(problem, { detail: `${reason}; try again shortly.`, headers });
}

const problemContentType = Object.freeze({ 'Content-Type': 'application/problem+json' });

/** The RFC 9457 body: type, title and status, then `detail` and `invalid-params` when the answer has them. */
function problemReply(error: HttpError): Reply {
  const { problem, detail, invalidParams } = error;
  const headers = error.headers === undefined ? problemContentType : { ...error.headers, ...problemContentType };
  const { title, status } = problem;
  const body = { type: problemType(problem), title, status, detail, 'invalid-params': invalidParams };
  return { status: problem.status, body, headers };
}

/** The token endpoint keeps the HTTP status but answers in the RFC 6749 §5.2 shape that OAuth clients parse. */
function oauthReply(error: HttpError): Reply {
  const { status } = error.problem;
  let code = status >= 500 ? 'server_error' : 'invalid_request';
  if (status === 429 || status === 503) code = 'temporarily_unavailable';
  const body = { error: code, error_description: error.detail ?? error.problem.title };
  return { status, body, headers: error.headers };
}

/**
 * Writes the whole answer with one writeHead and one end. Every answer carries the request id,
 * no-store and nosniff; a JSON body without a Content-Type of its own is application/json.
 */
function send(req: IncomingMessage, res: ServerResponse, deps: Deps, requestId: string, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  const headers = ['X-Request-Id', requestId, 'Cache-Control', 'no-store', 'X-Content-Type-Options', 'nosniff'];
  const { corsOrigins } = deps.config;
  const replyHeaders =
    corsOrigins.length === 0 ? reply.headers : { ...corsHeaders(req, corsOrigins), ...reply.headers };
  let typed = false;
  if (replyHeaders !== undefined) {
    for (const name in replyHeaders) {
      headers.push(name, replyHeaders[name]!);
      if (name.toLowerCase() === 'content-type') typed = true;
    }
  }
  // A body left unread (too large, or refused before reading) is not drained: the connection closes instead.
  if (hasUnreadBody(req)) headers.push('Connection', 'close');
  let body: string | undefined;
  if (typeof reply.body === 'string') {
    body = reply.body;
  } else if (reply.body !== undefined) {
    if (!typed) headers.push('Content-Type', 'application/json');
    // Ended by a newline, as text is: in a terminal, the prompt then starts on a line of its own.
    body = `${JSON.stringify(reply.body)}\n`;
  }
  // What node:http works out itself when end() writes the headers: with writeHead first it
  // would send the body chunked instead. A HEAD answer carries the Content-Length of the GET
  // answer (RFC 9110 §9.3.2), and node:http leaves out the body itself.
  if (reply.status !== 204 && reply.status !== 304) {
    headers.push('Content-Length', String(body === undefined ? 0 : Buffer.byteLength(body)));
  }
  res.writeHead(reply.status, headers);
  res.end(body);
}

function hasUnreadBody(req: IncomingMessage): boolean {
  const { 'transfer-encoding': chunked, 'content-length': length } = req.headers;
  return !req.complete && (chunked !== undefined || Number(length ?? 0) > 0);
}
