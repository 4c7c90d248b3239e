import postgres from 'postgres';
import { isDatabaseUnavailable } from '../database-errors.ts';
import { createGate, type Gate } from './gate.ts';

export type Sql = postgres.Sql;
export type Transaction = postgres.TransactionSql;
/** A piece of a statement, for statements that embed another's insert (security-events.ts insertEvents). */
export type Fragment = postgres.Fragment;

/**
 * The pool behind a stable handle, so that it can be replaced without rewiring, a bounded queue
 * in front of it (gate.ts), and a circuit breaker: while the database is known to be
 * unreachable, every query fails at once instead of waiting in the driver.
 */
export type Database = {
  sql: Sql;
  /** Told of database errors; one that shows the database unreachable or the pool broken opens the breaker. */
  noteFailure(error: unknown): void;
  /** False while the breaker is open. */
  isUp(): boolean;
  /** The most connections it opens: those of its pool. */
  connections: number;
  end(): Promise<void>;
};

/** How often a probe asks an unreachable database whether it is back. */
const probeIntervalMs = 250;
/** The most a new connection may take: a database that takes longer is treated as away. */
const connectTimeoutSeconds = 2;
/** Methods of the pool that send queries, refused at once while the breaker is open. */
const queryMethods = new Set<PropertyKey>(['begin', 'reserve', 'unsafe', 'file']);

/**
 * How long PostgreSQL may work on one statement and wait for one lock, in milliseconds, sent as
 * startup parameters of every connection (no statement per transaction); 0 sends nothing and
 * leaves it to the server's or the role's settings, as behind a pooler that refuses them
 * (docs/operations.md, "Poolers"). `queueTimeoutMs`: the most a query or transaction waits for
 * a connection of the pool.
 */
export type Bounds = { statementTimeoutMs: number; lockTimeoutMs: number; queueTimeoutMs: number };
const unbounded: Bounds = { statementTimeoutMs: 0, lockTimeoutMs: 0, queueTimeoutMs: 60_000 };
/** Work waiting for a connection, at most: past it a request is answered 503 at once. */
const maxQueued = 500;

export type PoolOptions = {
  applicationName?: string;
  bounds?: Bounds;
  onDown?: () => void;
  onUp?: () => void;
  onQuery?: (text: string, connection: number) => void;
};

/**
 * Why a breaker: when PostgreSQL goes away, postgres 3.4.9 keeps the queries it is given and
 * retries its connections with a backoff of up to 20 s, so requests would hang that long. On an
 * error that shows the database unreachable, the pool is ended (which fails the queries it
 * holds), every new query fails at once (503 at the HTTP edge), and a probe asks every 250 ms
 * with a connection of its own; its first answer brings a fresh pool.
 *
 * An error of one connection (its backend terminated, a proxy dropping it) does not show that:
 * the other connections may be fine. Then a fresh connection is tried first, and the breaker
 * opens only if that fails too; meanwhile the pool goes on serving.
 */
export function openDatabase(url: string, options: PoolOptions = {}): Database {
  const { onDown = () => {}, onUp = () => {} } = options;
  const bounds = options.bounds ?? unbounded;
  // As many slots as the pool has connections: the driver is never handed more work than it
  // has connections, which keeps its queues short (see poolSize).
  // A slot held past four statement bounds and a connection attempt is stuck in the driver.
  const maxHoldMs = bounds.statementTimeoutMs > 0 ? 4 * bounds.statementTimeoutMs + connectTimeoutSeconds * 1000 : 0;
  const onStuck = () => void (!down && !ended && open());
  const gate = createGate(poolSize, { maxQueued, maxWaitMs: bounds.queueTimeoutMs, maxHoldMs, onStuck });
  let current = connectDatabase(url, options);
  let down = false;
  let checking = false;
  let ended = false;
  const sql = new Proxy(function pool() {}, {
    apply: (_target, _this, args: unknown[]) => {
      // A tagged template sends a query; any other call builds a fragment or helper, sends nothing.
      if (!isTemplate(args[0])) return (current as unknown as (...args: unknown[]) => unknown)(...args);
      if (down) return refusedQuery();
      const pool = current as unknown as (...args: unknown[]) => Promise<unknown>;
      const again = () => (current === (pool as unknown) ? null : (current as unknown as typeof pool)(...args));
      return queryThroughGate(pool(...args), again, gate);
    },
    get: (_target, property) => {
      const value = (current as unknown as Record<PropertyKey, unknown>)[property];
      if (typeof value !== 'function') return value;
      if (down && queryMethods.has(property)) return () => refusedQuery();
      type Methods = Record<PropertyKey, (...args: unknown[]) => PromiseLike<unknown>>;
      const method = (pool: Sql) => (pool as unknown as Methods)[property]!.bind(pool);
      // A transaction holds its connection throughout, so it holds its place in the gate throughout.
      if (queryMethods.has(property)) return (...args: unknown[]) => throughGate(() => method(current)(...args), gate);
      return method(current);
    },
  }) as unknown as Sql;

  const open = () => {
    down = true;
    onDown();
    // Queries waiting in the driver for a connection would wait out its backoff: ending the
    // pool fails them now. It is not used again; the probe's success makes a new one.
    void current.end({ timeout: 0 }).catch(() => {});
    void probeUntilUp();
  };

  const probeUntilUp = async () => {
    while (down && !ended) {
      const answered = await answersOnFreshConnection(url, options.applicationName);
      if (answered && !ended) {
        current = connectDatabase(url, options);
        down = false;
        onUp();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, probeIntervalMs));
    }
  };

  return {
    sql,
    noteFailure(error) {
      if (down || ended || checking || !(isDatabaseUnavailable(error) || isPoolBroken(error))) return;
      if (isPoolBroken(error) || refusesConnections(error)) return open();
      checking = true;
      void answersOnFreshConnection(url, options.applicationName).then((answered) => {
        checking = false;
        if (!answered && !down && !ended) open();
      });
    },
    isUp: () => !down,
    connections: poolSize,
    async end() {
      ended = true;
      await current.end({ timeout: 5 });
    },
  };
}

/**
 * A transaction (or unsafe query) that takes its place in the gate when first awaited, and
 * keeps it until answered. It is begun only once a place is free, on the pool current then.
 */
function throughGate(start: () => PromiseLike<unknown>, gate: Gate): Promise<unknown> {
  let answer: Promise<unknown> | null = null;
  const settle = () => (answer ??= gate.run(start));
  return {
    then: (onFulfilled, onRejected) => settle().then(onFulfilled, onRejected),
    catch: (onRejected) => settle().catch(onRejected),
    finally: (onFinally) => settle().finally(onFinally),
    [Symbol.toStringTag]: 'Promise',
  } as Promise<unknown>;
}

/**
 * The same for a tagged query, which must stay the driver's own query object: it may be a
 * fragment of another query, and then it is never awaited itself. The driver sends a query when
 * it is first awaited (then, catch or finally); here that waits for a place in the gate. If the
 * breaker replaced its pool meanwhile (the old one has ended), `again` makes the same query on
 * the current one.
 */
function queryThroughGate(query: Promise<unknown>, again: () => Promise<unknown> | null, gate: Gate): Promise<unknown> {
  const { then } = query;
  let answer: Promise<unknown> | null = null;
  const send = () => new Promise((resolve, reject) => void then.call(query, resolve, reject));
  const settle = () => (answer ??= gate.run(() => again() ?? send()));
  query.then = ((onFulfilled, onRejected) => settle().then(onFulfilled, onRejected)) as Promise<unknown>['then'];
  query.catch = ((onRejected) => settle().catch(onRejected)) as Promise<unknown>['catch'];
  query.finally = ((onFinally) => settle().finally(onFinally)) as Promise<unknown>['finally'];
  return query;
}

/** Whether a connection of its own, outside the pool, gets an answer from the database. */
async function answersOnFreshConnection(url: string, applicationName = 'account-service'): Promise<boolean> {
  const probe = postgres(url, {
    ...sessionAttrs(url), max: 1, connect_timeout: 1, idle_timeout: 1, onnotice: () => {},
    connection: { application_name: applicationName },
  });
  const answered = await probe`SELECT 1`.then(() => true, () => false);
  await probe.end({ timeout: 0 }).catch(() => {});
  return answered;
}

function isTemplate(value: unknown): boolean {
  return Array.isArray(value) && Object.hasOwn(value, 'raw');
}

const databaseDown = 'the database is unreachable; waiting for it to answer again';

/**
 * What a refused query returns: a thenable that rejects when awaited. Not a rejected promise,
 * because a fragment that is built but never awaited on its own must not become an unhandled
 * rejection.
 */
function refusedQuery(): PromiseLike<never> {
  return {
    then: (onFulfilled, onRejected) =>
      Promise.reject(Object.assign(new Error(databaseDown), { code: 'DATABASE_DOWN' })).then(onFulfilled, onRejected),
  };
}

/**
 * postgres 3.4.9 has two defects that break a connection for good when the database goes away
 * while a write is queued (porsager/postgres#1154, #1208; both open). Either the queued write
 * throws from a timer (uncatchable where the query was made), or the connection keeps a stale
 * write buffer and never sends again, so every later use ends in CONNECT_TIMEOUT. In both
 * cases the only repair from outside is a fresh pool, which the breaker of openDatabase makes.
 */
export function isPoolBroken(error: unknown): boolean {
  return isDriverWriteDefect(error) || (error as { code?: unknown } | null)?.code === 'CONNECT_TIMEOUT';
}

/**
 * What the driver throws or rejects where no caller can catch it, as main.ts hands it to the
 * pool: the write defect, or its own query of the array types on a new connection (never
 * awaited) failing because the backend ended (docs/operations.md, "Driver defects").
 */
export function isUncaughtDriverDefect(error: unknown): boolean {
  const query = (error as { query?: unknown } | null)?.query;
  const typesQuery = typeof query === 'string' && query.includes('b.typarray');
  return isDriverWriteDefect(error) || (typesQuery && isDatabaseUnavailable(error));
}

/** The uncatchable throw of the first defect above: a queued write to a socket that is gone. */
export function isDriverWriteDefect(error: unknown): boolean {
  if (!(error instanceof TypeError) || !error.message.includes("reading 'write'")) return false;
  const stack = error.stack ?? '';
  return /\bnextWrite\b/.test(stack) && /postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js/.test(stack);
}

/**
 * postgres 3.4.9 takes a hot standby for read-write: against PostgreSQL 14 and later it reads
 * default_transaction_read_only, which a standby reports as off, instead of asking whether the
 * session is read-only. During a failover, with the primary gone and the standby not yet
 * promoted, the pool then connected to the standby and every write failed (25006). Asking for
 * `primary` instead checks in_hot_standby, which is right: on a primary the two differ only
 * when default_transaction_read_only is set, which would refuse this service's writes anyway.
 */
function sessionAttrs(url: string): { target_session_attrs?: 'primary' } {
  return /[?&]target_session_attrs=read-write(?:&|$)/.test(url) ? { target_session_attrs: 'primary' } : {};
}

/**
 * Connections of the pool, and places in the gate. The gate never lets more queries or
 * transactions into the pool than it has connections, and that is what keeps postgres 3.4.9
 * fast over uptime: handed more, the driver pipelines onto busy connections, and its queue of
 * busy connections then keeps an empty slot for every query it ever served while the pool stays
 * busy, which every later query searches (docs/operations.md, "Driver defects";
 * test/storage/db.test.ts shows that the handle never sends a query on a busy connection).
 */
const poolSize = 10;

/** `onQuery` sees the text of every statement (never its parameters), for tests that compare paths. */
export function connectDatabase(
  url: string, options: Pick<PoolOptions, 'applicationName' | 'onQuery' | 'bounds'> = {},
): Sql {
  const { applicationName = 'account-service', onQuery, bounds = unbounded } = options;
  return postgres(url, {
    ...sessionAttrs(url),
    ...(onQuery === undefined ? {} : { debug: (connection: number, text: string) => onQuery(text, connection) }),
    max: poolSize,
    connect_timeout: connectTimeoutSeconds,
    idle_timeout: 60,
    max_lifetime: 30 * 60,
    onnotice: () => {},
    connection: {
      application_name: applicationName,
      ...(bounds.statementTimeoutMs > 0 ? { statement_timeout: bounds.statementTimeoutMs } : {}),
      ...(bounds.lockTimeoutMs > 0 ? { lock_timeout: bounds.lockTimeoutMs } : {}),
      // A transaction that a client-side fault left open (as a pooler in the wrong mode did)
      // would hold its locks and its connection for good: the server ends it instead.
      ...(bounds.statementTimeoutMs > 0 ? { idle_in_transaction_session_timeout: bounds.statementTimeoutMs } : {}),
    },
  });
}

/** Errors that show new connections failing, not just one connection broken: the breaker opens at once. */
const refusingCodes = new Set([
  'DATABASE_DOWN', 'ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'CONNECT_TIMEOUT', '57P03',
]);

function refusesConnections(error: unknown): boolean {
  return refusingCodes.has((error as { code?: unknown } | null)?.code as string);
}
