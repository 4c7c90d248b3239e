import postgres from 'postgres';

export type Sql = postgres.Sql;
export type Transaction = postgres.TransactionSql;

/**
 * The pool behind a stable handle, so that the pool can be replaced without rewiring: when it is
 * broken (noteFailure), and every `queriesPerPool` queries (see defaultQueriesPerPool).
 */
export type Database = {
  sql: Sql;
  /** Replaces the pool if `error` shows that it is broken (see isPoolBroken); at most once in 10 s. */
  noteFailure(error: unknown): void;
  end(): Promise<void>;
};

const recycleIntervalMs = 10_000;

/**
 * postgres 3.4.9 gets slower with every query a pool serves, and holds more memory (README,
 * "Driver defects"): its queue of busy (or idle) connections keeps an empty slot for every
 * connection taken from its head until the queue is empty, which it never is while the pool is
 * busy, and each hand-over searches all the slots. A fresh pool starts with empty queues, so the
 * handle renews its pool after this many queries. The search then stays short (a few µs a query)
 * for the price of ten new connections every one to three seconds at full load. Written for
 * postgres 3.4.9 (test/db.test.ts fails on another version): drop the renewal once the driver's
 * Queue no longer keeps a slot per shift() (test/bench/driver-queue.ts shows it).
 */
export const defaultQueriesPerPool = 10_000;
/** What a renewed pool had started may finish: longer than a request (30 s) or an outbox send. */
const retiredPoolTimeoutSeconds = 60;

export type PoolOptions = {
  applicationName?: string;
  onRecycle?: () => void;
  onQuery?: (text: string) => void;
  queriesPerPool?: number;
  /** Called when a renewed pool's predecessor has been asked to end. */
  onRenew?: () => void;
};

export function openDatabase(url: string, options: PoolOptions = {}): Database {
  const { onRecycle = () => {}, onRenew = () => {}, queriesPerPool = defaultQueriesPerPool } = options;
  let current = connectDatabase(url, options);
  let served = 0;
  let recycledAt = 0;
  const retiring = new Set<Sql>();
  const replace = (): Sql => {
    const retired = current;
    current = connectDatabase(url, options);
    served = 0;
    return retired;
  };
  // Every call on the handle counts (queries, fragments, begin, unsafe): a signal, not a tally.
  const use = (): Sql => {
    if (++served >= queriesPerPool) retire(replace());
    return current;
  };
  const retire = (pool: Sql) => {
    retiring.add(pool);
    // end() mishandles a query still waiting in the old pool's own queue: the driver serves it
    // later on a connection that reopens after the end and then idles until idle_timeout. Queries
    // made on the handle just before the switch reach that queue a microtask later; a reservation
    // queues behind all of them, and once it is granted they have all been sent. end() then lets
    // them finish, open transactions included, before it closes the connections.
    setImmediate(() => {
      void pool
        .reserve()
        .then((reserved) => reserved.release(), () => {})
        .then(() => {
          onRenew();
          return pool.end({ timeout: retiredPoolTimeoutSeconds });
        })
        .catch(() => {})
        .finally(() => retiring.delete(pool));
    });
  };
  const sql = new Proxy(function pool() {}, {
    apply: (_target, _this, args: unknown[]) => (use() as unknown as (...args: unknown[]) => unknown)(...args),
    get: (_target, property) => {
      const pool = typeof (current as unknown as Record<PropertyKey, unknown>)[property] === 'function' ? use() : current;
      const value = (pool as unknown as Record<PropertyKey, unknown>)[property];
      return typeof value === 'function' ? value.bind(pool) : value;
    },
  }) as unknown as Sql;
  return {
    sql,
    noteFailure(error) {
      if (!isPoolBroken(error) || Date.now() - recycledAt < recycleIntervalMs) return;
      recycledAt = Date.now();
      void replace().end({ timeout: 5 }).catch(() => {});
      onRecycle();
    },
    async end() {
      await Promise.all([...retiring, current].map((pool) => pool.end({ timeout: 5 })));
    },
  };
}

/**
 * postgres 3.4.9 has two defects that break a connection for good when the database goes away
 * while a write is queued (porsager/postgres#1154, #1208; both open). Either the queued write
 * throws from a timer (uncatchable where the query was made), or the connection keeps a stale
 * write buffer and never sends again, so every later use ends in CONNECT_TIMEOUT. In both
 * cases the only repair from outside is a fresh pool.
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
export function connectDatabase(url: string, { applicationName = 'account-service', onQuery }: PoolOptions = {}): Sql {
  return postgres(url, {
    ...(onQuery === undefined ? {} : { debug: (_connection: number, text: string) => onQuery(text) }),
    max: 10,
    connect_timeout: 5,
    idle_timeout: 60,
    max_lifetime: 30 * 60,
    onnotice: () => {},
    connection: { application_name: applicationName },
  });
}

const unavailableCodes = new Set([
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
