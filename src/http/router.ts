import type { IncomingMessage } from 'node:http';
import type { Providers } from '../features/oidc/provider.ts';
import type { Limiter } from '../support/concurrency.ts';
import type { TokenGrant } from './oauth.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { TokenService } from '../core/tokens.ts';
import type { SigningKeyRing } from '../core/signing-keys.ts';
import type { UseCaseDeps } from '../core/transaction.ts';
import type { WebhookCounts } from '../webhooks/delivery.ts';

/** Everything a handler may use, handed in so that tests can supply their own clock or database. */
export type Deps = UseCaseDeps & {
  tokens: TokenService;
  /** The ES256 signing keys, for the JWKS; null with TOKEN_ALG=HS256. */
  signingKeys: SigningKeyRing | null;
  /** Webhook events by state as last counted (by the worker or the sweep); null when off. */
  webhookCounts(): WebhookCounts | null;
  /** Live sessions, as the sweep last counted them (telemetry/metrics.ts createLiveSessionCount). */
  liveSessions: { current(): Promise<number> };
  /** Whether the database holds every migration of this build (storage/migrations.ts isSchemaCurrent). */
  schemaCurrent(): Promise<boolean>;
  /** The client's address as the core decides it (core/client-address.ts, TRUST_PROXY). */
  clientAddressOf(req: IncomingMessage): string;
  /** Null when RATE_LIMIT is 0. */
  rateLimiter: RateLimiter | null;
  /** Sign-ins per account and network, a session's own requests per session. Null when ACCOUNT_RATE_LIMIT is 0. */
  accountRateLimiter: RateLimiter | null;
  /** Whether the mail server answered the last connection to it (SMTP only); null before any, and with mail files. */
  mailServerReachable(): boolean | null;
  /** False while the pool knows the database is away (db.ts); asks nothing of the database. */
  databaseUp(): boolean;
  /** The most database connections this instance opens (db.ts). */
  databaseConnections: number;
  /** Told of every database error, so that a broken pool can replace itself. */
  noteDatabaseFailure(error: unknown): void;
  /** The OpenID providers (features/oidc), while OIDC_PROVIDERS is set; null otherwise. */
  oidc: Providers | null;
  /** A reason in words to refuse a new password for, or null (features/common-passwords; off: always null). */
  screenPassword(password: string): Promise<string | null>;
  /** The token endpoint's grants beyond password and refresh_token, of the features that are on. */
  grants: TokenGrant[];
  /** The OpenAPI document, made once at start-up. */
  apiDocument: unknown;
  passwordLimiter: Limiter;
  /** This instance's `application_name` in PostgreSQL, to count its own connections. */
  applicationName: string;
};

export type RequestContext = {
  req: IncomingMessage; requestId: string; clientAddress: string; params: Record<string, string>;
};
export type Reply = { status: number; body?: unknown; headers?: Record<string, string> };
export type Handler = (ctx: RequestContext, deps: Deps) => Promise<Reply>;
export type Route = {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  handler: Handler;
  /** Counted against the per-address rate limit (the unauthenticated POSTs). */
  rateLimited?: boolean;
  /** The token endpoint answers errors as RFC 6749 §5.2 JSON instead of RFC 9457 problems. */
  errorFormat?: 'oauth';
  /** The log names the route's path (`{target}` as written), not the request's: its parameters may be addresses. */
  logTemplate?: boolean;
  /** The optional feature (FEATURES) the route is part of; while it is off, the route is not served. */
  feature?: string;
  /** The act of the proof table (core/proofs.ts) it does: it needs a bearer token and what the act's row says. */
  act?: string;
  /** The statuses its operation in the API document lists (api-document.ts fitDocument); the server warns of others. */
  statuses?: readonly number[];
};

export type RouteMatch = { route: Route; params: Record<string, string> } | { allow: string[] } | null;

export type Router = { match(method: string, path: string): RouteMatch };

/**
 * Exact match, segment by segment: a `{name}` segment takes one non-empty segment as the
 * parameter `name`. No wildcards, no regexes, no prefixes, no case folding. The first route in
 * order whose path and method match wins; a path that matches with other methods only answers
 * the methods it allows.
 *
 * Every answer for a path that some route spells out literally is worked out here, once: a
 * request for it costs two map lookups instead of a walk that compares it with every route.
 * The answers are shared by all requests, so they are frozen.
 */
export function createRouter(routes: readonly Route[]): Router {
  const literal = new Map<string, Map<string, RouteMatch>>();
  for (const route of routes) {
    if (route.path.includes('{') || literal.has(route.path)) continue;
    const answers = new Map<string, RouteMatch>();
    for (const method of new Set(['HEAD', ...routes.map((candidate) => candidate.method)])) {
      answers.set(method, freeze(matchRoute(routes, method, route.path)));
    }
    literal.set(route.path, answers);
  }
  const withParams = routes.filter((route) => route.path.includes('{'));
  return {
    match(method, path) {
      const answers = literal.get(path);
      // A method no route has gets the answer of the walk, with a fresh `allow` list.
      if (answers !== undefined) return answers.get(method) ?? matchRoute(routes, method, path);
      // A path that no route spells out can match only a route with parameters.
      return matchRoute(withParams, method, path);
    },
  };
}

function freeze(match: RouteMatch): RouteMatch {
  if (match !== null && 'allow' in match) Object.freeze(match.allow);
  return match === null ? null : Object.freeze(match);
}

/**
 * The walk over every route that createRouter does once per literal path. HEAD is served by the
 * GET route of the path, as RFC 9110 §9.3.2 asks: the server answers it like GET and leaves out
 * the body. So a path with GET allows HEAD too.
 */
export function matchRoute(routes: readonly Route[], method: string, path: string): RouteMatch {
  let allow: string[] | null = null;
  for (const route of routes) {
    const params = matchPath(route.path, path);
    if (params === null) continue;
    if (route.method === method || (method === 'HEAD' && route.method === 'GET')) return { route, params };
    (allow ??= []).push(...(route.method === 'GET' ? ['GET', 'HEAD'] : [route.method]));
  }
  return allow === null ? null : { allow };
}

const noParams: Record<string, string> = Object.freeze({});

/** The parameters of `path` under `pattern`, or null when it does not match. */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  if (!pattern.includes('{')) return pattern === path ? noParams : null;
  const expected = pattern.split('/');
  const given = path.split('/');
  if (expected.length !== given.length) return null;
  const params: Record<string, string> = {};
  for (const [index, part] of expected.entries()) {
    const value = given[index]!;
    if (part.startsWith('{')) {
      if (value === '') return null;
      params[part.slice(1, -1)] = value;
    } else if (part !== value) {
      return null;
    }
  }
  return params;
}
