import postgres from 'postgres';

export type Sql = postgres.Sql;
export type Transaction = postgres.TransactionSql;

/**
 * The pool behind a stable handle, so that it can be replaced without rewiring, and a circuit
 * breaker in front of it: while the database is known to be unreachable, every query fails at
 * once instead of waiting in the driver.
 */
export type Database = {
  sql: Sql;
  /** Told of database errors; one that shows the database unreachable or the pool broken opens the breaker. */
  noteFailure(error: unknown): void;
  /** False while the breaker is open. */
  isUp(): boolean;
  end(): Promise<void>;
};

/** How often a probe asks an unreachable database whether it is back. */
const probeIntervalMs = 250;
/** The most a new connection may take: a database that takes longer is treated as away. */
const connectTimeoutSeconds = 2;
/** Methods of the pool that send queries, refused at once while the breaker is open. */
const queryMethods = new Set<PropertyKey>(['begin', 'reserve', 'unsafe', 'file']);

export type PoolOptions = { applicationName?: string; onDown?: () => void; onUp?: () => void; onQuery?: (text: string) => void };

/**
 * Why a breaker: when PostgreSQL goes away, postgres 3.4.9 keeps the queries it is given and
 * retries its connections with a backoff of up to 20 s, so requests would hang that long. On the
 * first error that shows the database unreachable, the pool is ended (which fails the queries it
 * holds), every new query fails at once (503 at the HTTP edge), and a probe asks every 250 ms
 * with a connection of its own; its first answer brings a fresh pool.
 */
export function openDatabase(url: string, options: PoolOptions = {}): Database {
  const { onDown = () => {}, onUp = () => {} } = options;
  let current = connectDatabase(url, options);
  let down = false;
  let ended = false;
  const sql = new Proxy(function pool() {}, {
    apply: (_target, _this, args: unknown[]) => {
      // A tagged template sends a query; any other call builds a fragment or helper, sends nothing.
      if (down && isTemplate(args[0])) return refusedQuery();
      return (current as unknown as (...args: unknown[]) => unknown)(...args);
    },
    get: (_target, property) => {
      const value = (current as unknown as Record<PropertyKey, unknown>)[property];
      if (typeof value !== 'function') return value;
      if (down && queryMethods.has(property)) return () => refusedQuery();
      return value.bind(current);
    },
  }) as unknown as Sql;

  const probeUntilUp = async () => {
    while (down && !ended) {
      const probe = postgres(url, { max: 1, connect_timeout: 1, idle_timeout: 1, onnotice: () => {}, connection: { application_name: options.applicationName ?? 'account-service' } });
      const answered = await probe`SELECT 1`.then(() => true, () => false);
      await probe.end({ timeout: 0 }).catch(() => {});
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
      if (down || ended || !(isDatabaseUnavailable(error) || isPoolBroken(error))) return;
      down = true;
      onDown();
      // Queries waiting in the driver for a connection would wait out its backoff: ending the
      // pool fails them now. The pool is not used again; the probe's success makes a new one.
      void current.end({ timeout: 0 }).catch(() => {});
      void probeUntilUp();
    },
    isUp: () => !down,
    async end() {
      ended = true;
      await current.end({ timeout: 5 });
    },
  };
}

function isTemplate(value: unknown): boolean {
  return Array.isArray(value) && Object.hasOwn(value, 'raw');
}

/**
 * What a refused query returns: a thenable that rejects when awaited. Not a rejected promise,
 * because a fragment that is built but never awaited on its own must not become an unhandled
 * rejection.
 */
function refusedQuery(): PromiseLike<never> {
  return {
    then: (onFulfilled, onRejected) =>
      Promise.reject(Object.assign(new Error('the database is unreachable; waiting for it to answer again'), { code: 'DATABASE_DOWN' })).then(onFulfilled, onRejected),
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

/** The uncatchable throw of the first defect above: a queued write to a socket that is gone. */
export function isDriverWriteDefect(error: unknown): boolean {
  if (!(error instanceof TypeError) || !error.message.includes("reading 'write'")) return false;
  const stack = error.stack ?? '';
  return /\bnextWrite\b/.test(stack) && /postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js/.test(stack);
}

/** `onQuery` sees the text of every statement (never its parameters), for tests that compare paths. */
export function connectDatabase(url: string, { applicationName = 'account-service', onQuery }: Pick<PoolOptions, 'applicationName' | 'onQuery'> = {}): Sql {
  return postgres(url, {
    ...(onQuery === undefined ? {} : { debug: (_connection: number, text: string) => onQuery(text) }),
    max: 10,
    connect_timeout: connectTimeoutSeconds,
    idle_timeout: 60,
    max_lifetime: 30 * 60,
    onnotice: () => {},
    connection: { application_name: applicationName },
  });
}

const unavailableCodes = new Set([
  'DATABASE_DOWN', // the breaker of openDatabase is open
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
]);

/** True for errors that mean the database is out of reach, not that a query was wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (unavailableCodes.has(code) || code.startsWith('08'));
}

/** True when `error` is PostgreSQL's unique_violation on the named index. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const { code, constraint_name } = (error ?? {}) as { code?: unknown; constraint_name?: unknown };
  return code === '23505' && constraint_name === constraint;
}
