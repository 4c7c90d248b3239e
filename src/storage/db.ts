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

/**
 * postgres 3.4.9 gets slower with every query a pool serves, and holds more memory (README,
 * "Driver defects"): its queue of busy (or idle) connections keeps an empty slot for every
 * connection taken from its head until the queue is empty, which it never is while the pool is
 * busy, and each hand-over searches all the slots. A fresh pool starts with empty queues, so the
 * handle renews its pool after this many queries. The search then stays short (a few µs a query)
 * for the price of ten new connections every one to three seconds at full load. Written for
 * postgres 3.4.9 (test/storage/db.test.ts fails on another version): drop the renewal once the
 * driver's Queue no longer keeps a slot per shift() (test/bench/driver-queue.ts shows it).
 */
export const defaultQueriesPerPool = 10_000;
/** What a renewed pool had started may finish: longer than a request (30 s) or an outbox send. */
const retiredPoolTimeoutSeconds = 60;

export type PoolOptions = {
  applicationName?: string;
  onDown?: () => void;
  onUp?: () => void;
  onQuery?: (text: string, connection: number) => void;
  queriesPerPool?: number;
  /** Called when a renewed pool's predecessor has been asked to end. */
  onRenew?: () => void;
};

/**
 * Why a breaker: when PostgreSQL goes away, postgres 3.4.9 keeps the queries it is given and
 * retries its connections with a backoff of up to 20 s, so requests would hang that long. On the
 * first error that shows the database unreachable, the pool is ended (which fails the queries it
 * holds), every new query fails at once (503 at the HTTP edge), and a probe asks every 250 ms
 * with a connection of its own; its first answer brings a fresh pool.
 */
export function openDatabase(url: string, options: PoolOptions = {}): Database {
  const { onDown = () => {}, onUp = () => {}, onRenew = () => {}, queriesPerPool = defaultQueriesPerPool } = options;
  let current = connectDatabase(url, options);
  let served = 0;
  let down = false;
  let ended = false;
  const retiring = new Set<Sql>();
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
  // The next pool, while its connections open: queries stay on the current one until all ten
  // are open, so that no request waits for a connection handshake (the renewal showed as a
  // p99 of 60 ms at full load when the switch came first and the connections after).
  let warming: Sql | null = null;
  const renew = () => {
    const fresh = connectDatabase(url, options);
    warming = fresh;
    // A reservation opens a connection without a statement (none shows in onQuery).
    Promise.all(Array.from({ length: poolSize }, () => fresh.reserve())).then(
      (reserved) => {
        for (const connection of reserved) connection.release();
        warming = null;
        // The breaker opened or the handle ended meanwhile: this pool is not wanted.
        if (down || ended) return void fresh.end({ timeout: 0 }).catch(() => {});
        const retired = current;
        current = fresh;
        served = 0;
        retire(retired);
      },
      // The database did not open the connections (unreachable, or at its connection limit): the
      // current pool goes on, and the next try is due after as many queries again, not on the
      // next query, so that a database refusing connections is not asked ten more per query.
      () => {
        warming = null;
        served = 0;
        void fresh.end({ timeout: 0 }).catch(() => {});
      },
    );
  };
  // Every call on the handle counts (queries, fragments, begin, unsafe): a signal, not a tally.
  const use = (): Sql => {
    if (++served >= queriesPerPool && warming === null && !down) renew();
    return current;
  };
  const sql = new Proxy(function pool() {}, {
    apply: (_target, _this, args: unknown[]) => {
      // A tagged template sends a query; any other call builds a fragment or helper, sends nothing.
      if (down && isTemplate(args[0])) return refusedQuery();
      return (use() as unknown as (...args: unknown[]) => unknown)(...args);
    },
    get: (_target, property) => {
      const value = (current as unknown as Record<PropertyKey, unknown>)[property];
      if (typeof value !== 'function') return value;
      if (down && queryMethods.has(property)) return () => refusedQuery();
      const pool = use();
      return ((pool as unknown as Record<PropertyKey, (...args: unknown[]) => unknown>)[property]!).bind(pool);
    },
  }) as unknown as Sql;

  const probeUntilUp = async () => {
    while (down && !ended) {
      const probe = postgres(url, { max: 1, connect_timeout: 1, idle_timeout: 1, onnotice: () => {}, connection: { application_name: options.applicationName ?? 'account-service' } });
      const answered = await probe`SELECT 1`.then(() => true, () => false);
      await probe.end({ timeout: 0 }).catch(() => {});
      if (answered && !ended) {
        current = connectDatabase(url, options);
        served = 0;
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
      // pools fails them now. They are not used again; the probe's success makes a new one.
      for (const pool of [current, ...retiring, ...(warming === null ? [] : [warming])]) void pool.end({ timeout: 0 }).catch(() => {});
      void probeUntilUp();
    },
    isUp: () => !down,
    async end() {
      ended = true;
      await Promise.all([...retiring, current, ...(warming === null ? [] : [warming])].map((pool) => pool.end({ timeout: 5 })));
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
/** Connections of a pool. */
const poolSize = 10;

export function connectDatabase(url: string, { applicationName = 'account-service', onQuery }: Pick<PoolOptions, 'applicationName' | 'onQuery'> = {}): Sql {
  return postgres(url, {
    ...(onQuery === undefined ? {} : { debug: (connection: number, text: string) => onQuery(text, connection) }),
    max: poolSize,
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
