// The service's HTTP layer as production runs it (the compiled dist/, which npm run bench builds
// first: tsx would wrap every named closure in a call that names it, a cost the build does not
// have), with only what the rejected-body path uses: it never reaches the database, the mail or
// the hasher. The in-process run and the HTTP-layer reference both serve through it.
import type { Server } from 'node:http';
import type { Route } from '../../src/http/router.ts';

/** createServer of dist/http/server.js over `routes` (all of the service's by default), its log buffered as in production and handed to `write`. */
export async function compiledHttpServer(write: (chunk: string) => void, routesFrom: (routes: readonly Route[]) => readonly Route[] = (routes) => routes): Promise<Server> {
  const compiled = <T>(path: string) => import(new URL(`../../dist/${path}`, import.meta.url).href) as Promise<T>;
  const { createServer } = await compiled<typeof import('../../src/http/server.ts')>('http/server.js');
  const { routes } = await compiled<typeof import('../../src/routes.ts')>('routes.js');
  const { createMetrics } = await compiled<typeof import('../../src/telemetry/metrics.ts')>('telemetry/metrics.js');
  const { createBufferedWriter, createLogger } = await compiled<typeof import('../../src/telemetry/log.ts')>('telemetry/log.js');
  const output = createBufferedWriter(write);
  const deps = {
    config: { corsOrigins: [], trustProxy: 0 }, log: createLogger('info', output.write), metrics: createMetrics(), rateLimiter: null, clock: () => new Date(),
    // The client's address as the service takes it without a proxy (core/client-address.ts with TRUST_PROXY=0).
    clientAddressOf: (req: import('node:http').IncomingMessage) => req.socket.remoteAddress ?? 'unknown',
  };
  return createServer(deps as never, routesFrom(routes));
}
