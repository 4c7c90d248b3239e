import postgres from 'postgres';

export type Sql = postgres.Sql;
export type Transaction = postgres.TransactionSql;

/** The pool behind a stable handle, so that a broken pool can be replaced without rewiring. */
export type Database = {
  sql: Sql;
  /** Replaces the pool if `error` shows that it is broken (see isPoolBroken); at most once in 10 s. */
  noteFailure(error: unknown): void;
  end(): Promise<void>;
};

const recycleIntervalMs = 10_000;

export type PoolOptions = { applicationName?: string; onRecycle?: () => void; onQuery?: (text: string) => void };

export function openDatabase(url: string, options: PoolOptions = {}): Database {
  const { onRecycle = () => {} } = options;
  let current = connectDatabase(url, options);
  let recycledAt = 0;
  const sql = new Proxy(function pool() {}, {
    apply: (_target, _this, args: unknown[]) => (current as unknown as (...args: unknown[]) => unknown)(...args),
    get: (_target, property) => {
      const value = (current as unknown as Record<PropertyKey, unknown>)[property];
      return typeof value === 'function' ? value.bind(current) : value;
    },
  }) as unknown as Sql;
  return {
    sql,
    noteFailure(error) {
      if (!isPoolBroken(error) || Date.now() - recycledAt < recycleIntervalMs) return;
      recycledAt = Date.now();
      const retired = current;
      current = connectDatabase(url, options);
      void retired.end({ timeout: 5 }).catch(() => {});
      onRecycle();
    },
    end: () => current.end({ timeout: 5 }),
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
