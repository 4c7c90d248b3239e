/**
 * What an error from PostgreSQL or its driver means, by its code: the database out of reach,
 * busy for a moment, behind a pooler set up for something else, or a unique index refusing a
 * row. Read by the pool's breaker (storage/db.ts), the HTTP error boundary and the start-up.
 */

const unavailableCodes = new Set([
  'DATABASE_DOWN', // the breaker of openDatabase (storage/db.ts) is open
  'DATABASE_STUCK', // a query or transaction held its connection too long (storage/gate.ts)
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE', // a write to a connection whose backend has gone
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
  '25006', // read_only_sql_transaction: the connection is to a standby, not the primary
]);

/**
 * What a request that met the database busy or in conflict for a moment is told: it may try
 * again shortly (503 with Retry-After), and none of these is a fault of the service (500).
 */
const busyCodes: ReadonlyMap<string, string> = new Map([
  ['DATABASE_BUSY', 'the queue for a database connection is full or waited too long'], // storage/gate.ts
  ['57014', 'a statement ran past DATABASE_STATEMENT_TIMEOUT or was cancelled'],
  ['55P03', 'a lock was not granted within DATABASE_LOCK_TIMEOUT'],
  // The server ends a connection that sat inside a transaction longer than the statement bound
  // (idle_in_transaction_session_timeout, storage/db.ts): on a starved machine, the statement
  // that next used it gets this. The pool replaces the connection; the request may try again.
  ['25P03', 'a connection sat idle inside a transaction past DATABASE_STATEMENT_TIMEOUT and was ended'],
  ['40P01', 'a deadlock'],
  ['40001', 'a serialization failure'],
  ['53300', 'the database has no connection slot left'],
  ['53400', 'a configured limit of the database was exceeded'],
]);

/** Why the database refused for a moment, or null if `error` is not such a refusal. */
export function busyReason(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? (busyCodes.get(code) ?? null) : null;
}

/**
 * What an operator must change when the database sits behind a pooler that is set up for
 * something else, in one line; null for any other error. A transaction-mode pooler hands each
 * transaction to any server connection, so a statement prepared on one is missing on the next
 * (26000); and it refuses startup parameters it does not track.
 */
export function poolerHint(error: unknown): string | null {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code === '26000') {
    return 'prepared statement missing: a transaction-mode pooler (PgBouncer, Supavisor, RDS Proxy) is in front of ' +
      'PostgreSQL; add prepare=false to DATABASE_URL (docs/operations.md, Poolers)';
  }
  const parameter = typeof message === 'string' ? /unsupported startup parameter: (\w+)/.exec(message)?.[1] : undefined;
  if (parameter === undefined) return null;
  return `the pooler refuses the startup parameter ${parameter}: add ` +
    'statement_timeout,lock_timeout,idle_in_transaction_session_timeout to its ignore_startup_parameters ' +
    'and set them on the role, or set DATABASE_STATEMENT_TIMEOUT=0 and DATABASE_LOCK_TIMEOUT=0 ' +
    '(docs/operations.md, Poolers)';
}

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
