import type { IncomingMessage } from 'node:http';
import type { Reply } from './router.ts';

const allowedHeaders = 'Authorization, Content-Type, X-Request-Id';
const exposedHeaders = 'Retry-After, WWW-Authenticate, X-Request-Id';

/**
 * CORS for browser clients on the exact origins of CORS_ORIGINS, and nothing for any other.
 * Credentials (cookies) are never allowed: the API takes bearer tokens in a header.
 */
export function corsHeaders(req: IncomingMessage, origins: readonly string[]): Record<string, string> {
  const origin = req.headers.origin;
  if (origins.length === 0) return {};
  // Vary even when refused, so that a cache never serves one origin's answer to another.
  if (origin === undefined || !origins.includes(origin)) return { Vary: 'Origin' };
  return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': exposedHeaders, Vary: 'Origin' };
}

/** The answer to a preflight (OPTIONS with Access-Control-Request-Method) from an allowed origin, else null. */
export function preflightReply(req: IncomingMessage, origins: readonly string[], methods: string[]): Reply | null {
  const origin = req.headers.origin;
  const requested = req.headers['access-control-request-method'];
  if (req.method !== 'OPTIONS' || origin === undefined || !origins.includes(origin)) return null;
  if (requested === undefined || !methods.includes(requested)) return null;
  return {
    status: 204,
    headers: {
      'Access-Control-Allow-Origin': origin,
      'Access-Control-Allow-Methods': methods.join(', '),
      'Access-Control-Allow-Headers': allowedHeaders,
      'Access-Control-Max-Age': '600',
      Vary: 'Origin',
    },
  };
}
