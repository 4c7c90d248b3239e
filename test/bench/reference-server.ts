// A reference for one workload: bare node:http that does the work the service's path must do
// (read and parse the body, the same SQL through the same driver and pool size, or the same
// scrypt) and nothing else, and answers with the very bytes the service answered. The bench
// starts it with a plan as JSON in argv; it prints its port as one JSON line.
//
// With `httpLayer`, the same handler runs behind the service's own HTTP layer (the compiled
// src/http/server.ts: request id, routing, headers, the metric and the log line of every
// request) instead of bare node:http: it shows how much of the gap to bare node:http that
// layer alone makes.
import { createHash, scrypt } from 'node:crypto';
import { openSync, writeSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { disabledWebhooks } from '../../src/webhooks/events.ts';
import { findCode, hashCode } from '../../src/core/one-time-codes.ts';
import { activateAccount } from '../../src/features/registration/activate.ts';
import type { UseCaseDeps } from '../../src/core/transaction.ts';
import { createSealer } from '../../src/core/sealing.ts';
import { createMailRenderer } from '../../src/mail/templates.ts';
import { findSessionAccount, rotateRefreshToken } from '../../src/core/sessions.ts';
import { connectDatabase } from '../../src/storage/db.ts';
import type { ScryptParams } from '../../src/config/config.ts';
import type { Route } from '../../src/http/router.ts';
import { compiledHttpServer } from './compiled-http.ts';

/** A response as the service sent it, less what node:http adds itself (Date, Connection, Keep-Alive). */
export type CapturedReply = { status: number; headers: string[]; body: string };

export type ReferenceWork =
  | { kind: 'none' }
  | { kind: 'code-read'; databaseUrl: string }
  | { kind: 'account-read'; databaseUrl: string; publicId: string; sessionId: string }
  | { kind: 'refresh-rotation'; databaseUrl: string }
  | { kind: 'activation'; databaseUrl: string; secret: string }
  | { kind: 'scrypt'; params: ScryptParams; concurrency: number };

export type ReferencePlan = {
  reply: CapturedReply;
  /** Read the body, decode it as strict UTF-8 and JSON.parse it, as the service does; otherwise drain it. */
  parseBody: boolean;
  work: ReferenceWork;
  /** Serve through the service's HTTP layer instead of bare node:http (rejected-body path only). */
  httpLayer?: boolean;
};

type Work = (body: Record<string, string>, req: IncomingMessage) => Promise<boolean>;

const plan = JSON.parse(process.argv[2]!) as ReferencePlan;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const work = createWork(plan.work);

const server =
  plan.httpLayer === true
    ? await httpLayerServer()
    : createServer((req, res) =>
        onBody(req, (body) => {
          if (work === null) return answer(res, true);
          work(body, req).then(
            (done) => answer(res, done),
            () => answer(res, false),
          );
        }),
      );
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address !== null ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

/**
 * The body read as the service reads it (strict UTF-8, then JSON.parse) and handed to `use` at
 * its end; when the plan does not parse bodies, only drained.
 */
function onBody(req: IncomingMessage, use: (body: Record<string, string>) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => {
    if (plan.parseBody) chunks.push(chunk);
  });
  req.on('end', () => use(plan.parseBody ? (JSON.parse(utf8.decode(Buffer.concat(chunks))) as Record<string, string>) : {}));
}

/**
 * The compiled service's HTTP layer with one route, POST /acc/reg/code, whose handler does what
 * the bare server does (onBody) and answers the captured reply. Its log lines are written to
 * /dev/null, buffered as in production: the write calls stay.
 */
function httpLayerServer(): Promise<Server> {
  const headers: Record<string, string> = {};
  for (let index = 0; index < plan.reply.headers.length; index += 2) {
    const name = plan.reply.headers[index]!;
    // The layer writes these itself.
    if (!['x-request-id', 'cache-control', 'x-content-type-options', 'content-length'].includes(name.toLowerCase())) headers[name] = plan.reply.headers[index + 1]!;
  }
  const handler = (ctx: { req: IncomingMessage }) => new Promise((resolve) => onBody(ctx.req, () => resolve({ status: plan.reply.status, body: plan.reply.body, headers })));
  const devNull = openSync('/dev/null', 'w');
  return compiledHttpServer(
    (chunk) => writeSync(devNull, chunk),
    (routes) => [{ ...routes.find((route) => route.method === 'POST' && route.path === '/acc/reg/code')!, handler } as Route],
  );
}

/** The captured bytes; a 500 when the work did not do what the service's path does (a used-up token), so that the bench sees it. */
function answer(res: ServerResponse, done: boolean): void {
  if (!done) {
    res.writeHead(500);
    res.end();
    return;
  }
  res.writeHead(plan.reply.status, plan.reply.headers);
  res.end(plan.reply.body);
}

function createWork(spec: ReferenceWork): Work | null {
  switch (spec.kind) {
    case 'none':
      return null;
    case 'code-read': {
      const sql = connectDatabase(spec.databaseUrl);
      return async (body) => {
        await findCode(sql, 'registration', hashCode(body.code!));
        return true;
      };
    }
    case 'account-read': {
      const sql = connectDatabase(spec.databaseUrl);
      return async () => (await findSessionAccount(sql, spec.publicId, spec.sessionId, new Date())) !== null;
    }
    case 'refresh-rotation': {
      const sql = connectDatabase(spec.databaseUrl);
      return async (body, req) => {
        const rotation = await rotateRefreshToken(sql, body.refresh_token!, { address: '127.0.0.1', userAgent: req.headers['user-agent'] ?? '' }, new Date());
        return rotation.outcome !== 'refused' && rotation.outcome !== 'reused';
      };
    }
    case 'activation': {
      // The statements of POST /acc/reg (activate-account.ts), in the same order.
      const sql = connectDatabase(spec.databaseUrl);
      const sealer = createSealer([{ id: 'bench', key: createHash('sha256').update(spec.secret).digest() }]);
      // The built-in messages, rendered and sealed as the service does (the reference answered
      // 500 once the use case rendered its mail through deps.mailer, and nobody noticed).
      const mailer = { ...createMailRenderer(), sealer };
      const deps = { sql, clock: () => new Date(), sealer, mailer, outbox: { wake() {}, wakeLater() {} }, webhooks: disabledWebhooks } as unknown as UseCaseDeps;
      return async (body) => {
        const codeHash = hashCode(body.code!);
        const code = await findCode(sql, 'registration', codeHash);
        if (code === null) return false;
        return activateAccount(deps, { id: code.accountId, publicId: code.publicId, name: code.name, email: code.email, locale: code.locale }, codeHash, { address: '127.0.0.1', userAgent: '' });
      };
    }
    case 'scrypt':
      return rawScrypt(spec.params, spec.concurrency);
  }
}

/** crypto.scrypt at the service's parameters, at most `concurrency` at once, the rest waiting in order. */
function rawScrypt(params: ScryptParams, concurrency: number): Work {
  const cost = 2 ** params.ln;
  const options = { N: cost, r: params.r, p: params.p, maxmem: 256 * cost * params.r };
  const waiting: Array<() => void> = [];
  let running = 0;
  return async (body) => {
    if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else running += 1;
    try {
      await new Promise<Buffer>((resolve, reject) => scrypt(body.pwd ?? body.password ?? body.old_pwd ?? '', 'sixteen-byte-salt', 32, options, (error, key) => (error ? reject(error) : resolve(key))));
    } finally {
      const next = waiting.shift();
      if (next === undefined) running -= 1;
      else next();
    }
    return true;
  };
}
