import postgres from 'postgres';

export type Sql = postgres.Sql;
export type Transaction = postgres.TransactionSql;

export function connectDatabase(url: string): Sql {
  return postgres(url, {
    max: 10,
    connect_timeout: 5,
    idle_timeout: 60,
    max_lifetime: 30 * 60,
    onnotice: () => {},
    connection: { application_name: 'account-service' },
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
