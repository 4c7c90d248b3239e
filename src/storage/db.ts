import postgres from 'postgres';
import { isDatabaseUnavailable } from './database-errors.ts';
import { createGate, type Gate, type WorkKind } from './gate.ts';

export type Sql = postgres.Sql;
export type Transaction = postgres.TransactionSql;
/** A piece of a statement, for statements that embed another's insert (security-events.ts insertEvents). */
export type Fragment = postgres.Fragment;

/**
 * Ten connections, each a driver pool of its own, behind one handle that is used like a driver
 * pool: a bounded queue in front of them (gate.ts) gives each query or transaction a connection,
 * a connection whose work is stuck is replaced, and a circuit breaker: while the database is
 * known to be unreachable, every query fails at once instead of waiting in the driver.
 */
export type Database = {
  sql: Sql;
  /**
   * Told of database errors; one that shows the database unreachable or the pool broken opens
   * the breaker or renews the pools. Settles, never rejects, when that is decided, with what was done.
   */
  noteFailure(error: unknown): Promise<'ignored' | 'opened' | 'kept' | 'renewed' | 'unprepared'>;
  /** False while the breaker is open. */
  isUp(): boolean;
  /** The most connections it opens. */
  connections: number;
  end(): Promise<void>;
};

/** How often a probe asks an unreachable database whether it is back. */
const probeIntervalMs = 250;
/** The most a new connection may take: a database that takes longer is treated as away. */
const connectTimeoutSeconds = 2;
/**
 * The least time between two renewals that follow errors, equal to the time the old pools get to
 * finish: so no more than two generations of connections are ever open. A machine too busy to
 * open connections in time would otherwise renew on every timeout, each renewal adding more.
 */
const renewalSpacingMs = 5_000;
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
  /** False: statements are not prepared (the driver's `prepare`), as a transaction-mode pooler needs. */
  prepare?: boolean;
  /** Told once when a missing prepared statement showed a transaction-mode pooler: no more prepared statements. */
  onUnprepared?: () => void;
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
 * An error of one connection (its backend terminated, a proxy dropping it, a connection attempt
 * over its time, the driver's defects below) does not show that: the other connections may be
 * fine. Then a fresh connection is tried first, and the breaker opens only if that fails too;
 * meanwhile the pool goes on serving, and after one of the driver's defects it is renewed.
 */
export function openDatabase(url: string, options: PoolOptions = {}): Database {
  const { onDown = () => {}, onUp = () => {} } = options;
  const bounds = options.bounds ?? unbounded;
  // A piece of work held past four statement bounds and a connection attempt is stuck in the driver.
  const maxHoldMs = bounds.statementTimeoutMs > 0 ? 4 * bounds.statementTimeoutMs + connectTimeoutSeconds * 1000 : 0;
  // One driver pool of one connection for each connection of the gate (see poolSize).
  // `onQuery` is told the connection's index here: each driver pool numbers its one connection alike.
  const { onQuery } = options;
  let prepare = options.prepare;
  const connectOne = (index: number) => connectDatabase(url, {
    ...options, connections: 1, ...(onQuery === undefined ? {} : { onQuery: (text: string) => onQuery(text, index) }),
    ...(prepare === false ? { prepare } : {}),
  });
  const connectAll = () => Array.from({ length: poolSize }, (_, index) => connectOne(index));
  let pools = connectAll();
  const replacedAt = new Array<number>(poolSize).fill(0);
  let renewedAt = -Infinity;
  // Work that began before a renewal is not the new pools' to answer for (onStuck).
  const renewAll = () => {
    pools = connectAll();
    replacedAt.fill(performance.now());
  };
  // The stuck connection alone is replaced, once for all the work it held: ending its pool
  // fails what the driver kept there.
  const onStuck = (connection: number, since: number) => {
    if (down || ended || replacedAt[connection]! > since) return;
    void pools[connection]!.end({ timeout: 0 }).catch(() => {});
    pools[connection] = connectOne(connection);
    replacedAt[connection] = performance.now();
  };
  const maxWaitMs = bounds.queueTimeoutMs;
  const gate = createGate(poolSize, { depth: pipelineDepth, maxQueued, maxWaitMs, maxHoldMs, onStuck });
  let down = false;
  let checking = false;
  let ended = false;
  type Call = (...args: unknown[]) => Promise<unknown>;
  const sql = new Proxy(function pool() {}, {
    apply: (_target, _this, args: unknown[]) => {
      // A tagged template sends a query; any other call builds a fragment or helper, sends nothing.
      const first = pools[0] as unknown as Call;
      if (!isTemplate(args[0])) return first(...args);
      if (down) return refusedQuery();
      // Made on the first pool, so that it can be a fragment of another query; sent on the one the gate gives.
      const on = (connection: number) => {
        const pool = pools[connection] as unknown as Call;
        return pool === first ? null : pool(...args);
      };
      return queryThroughGate(first(...args), on, gate);
    },
    get: (_target, property) => {
      const value = (pools[0] as unknown as Record<PropertyKey, unknown>)[property];
      if (typeof value !== 'function') return value;
      if (down && queryMethods.has(property)) return () => refusedQuery();
      type Methods = Record<PropertyKey, (...args: unknown[]) => PromiseLike<unknown>>;
      const method = (pool: Sql) => (pool as unknown as Methods)[property]!.bind(pool);
      if (!queryMethods.has(property)) return method(pools[0]!);
      if (property === 'reserve') return () => reserveThroughGate((connection) => pools[connection]!.reserve(), gate);
      // A transaction holds its connection throughout, and has it to itself.
      if (property === 'begin') {
        return (...args: unknown[]) =>
          throughGate((connection) => beginOn(pools[connection]!, args), gate, 'transaction');
      }
      const run = async (connection: number, args: unknown[]) => answered(await method(pools[connection]!)(...args));
      return (...args: unknown[]) => throughGate((connection) => run(connection, args), gate, 'query');
    },
  }) as unknown as Sql;

  const open = () => {
    down = true;
    onDown();
    // Queries waiting in the driver for a connection would wait out its backoff: ending the
    // pools fails them now. They are not used again; the probe's success makes new ones.
    for (const pool of pools) void pool.end({ timeout: 0 }).catch(() => {});
    void probeUntilUp();
  };

  const probeUntilUp = async () => {
    while (down && !ended) {
      const reached = await answersOnFreshConnection(url, options.applicationName);
      if (reached && !ended) {
        renewAll();
        down = false;
        onUp();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, probeIntervalMs));
    }
  };

  return {
    sql,
    async noteFailure(error) {
      // A statement prepared on one server connection and missing on the next (26000) shows a
      // transaction-mode pooler: from now on no statement is prepared, on fresh pools, so that the
      // operator's likeliest mistake (no prepare=false in DATABASE_URL) costs a few 503s, not hangs.
      if (prepare !== false && (error as { code?: unknown } | null)?.code === '26000' && !down && !ended) {
        prepare = false;
        const old = pools;
        renewAll();
        renewedAt = performance.now();
        for (const pool of old) void pool.end({ timeout: renewalSpacingMs / 1000 }).catch(() => {});
        options.onUnprepared?.();
        return 'unprepared';
      }
      if (down || ended || checking || !(isDatabaseUnavailable(error) || isPoolBroken(error))) return 'ignored';
      if (refusesConnections(error)) {
        open();
        return 'opened';
      }
      checking = true;
      const reached = await answersOnFreshConnection(url, options.applicationName).finally(() => {
        checking = false;
      });
      if (down || ended) return 'ignored';
      if (!reached) {
        open();
        return 'opened';
      }
      // The database answers: a connection the driver left broken is repaired by fresh pools,
      // with no refusal meanwhile; the old ones finish what they hold.
      if (!isPoolBroken(error) || performance.now() - renewedAt < renewalSpacingMs) return 'kept';
      const old = pools;
      renewAll();
      renewedAt = performance.now();
      for (const pool of old) void pool.end({ timeout: renewalSpacingMs / 1000 }).catch(() => {});
      return 'renewed';
    },
    isUp: () => !down,
    connections: poolSize,
    async end() {
      ended = true;
      await Promise.all(pools.map((pool) => pool.end({ timeout: 5 })));
    },
  };
}

/**
 * A transaction (or unsafe query) that takes a connection of the gate when first awaited, and
 * keeps it until answered. It is begun only then, on the pool of that connection.
 */
function throughGate(start: (connection: number) => PromiseLike<unknown>, gate: Gate, kind: WorkKind) {
  let answer: Promise<unknown> | null = null;
  const settle = () => (answer ??= gate.run(start, kind));
  return {
    then: (onFulfilled, onRejected) => settle().then(onFulfilled, onRejected),
    catch: (onRejected) => settle().catch(onRejected),
    finally: (onFinally) => settle().finally(onFinally),
    [Symbol.toStringTag]: 'Promise',
  } as Promise<unknown>;
}

/**
 * A transaction whose handle refuses statements once the transaction has ended. The driver
 * would send them on the same connection, outside any transaction: after a commit, or after
 * the connection closed and the driver failed the transaction while its callback still waited
 * on a statement (which the reconnection may settle; see answered).
 */
function beginOn(pool: Sql, args: unknown[]): Promise<unknown> {
  const work = args.at(-1) as (tx: Transaction) => unknown;
  let ended = false;
  const guarded = (tx: Transaction) => new Proxy(tx, {
    apply: (target, self, callArgs: unknown[]) => {
      if (ended && isTemplate(callArgs[0])) {
        throw connectionClosed('a statement of a transaction that has ended');
      }
      return Reflect.apply(target, self, callArgs);
    },
  });
  const begun = Reflect.apply(pool.begin, pool, [...args.slice(0, -1), (tx: Transaction) => work(guarded(tx))]);
  return (begun as Promise<unknown>).finally(() => (ended = true));
}

/** A reserved connection: it keeps its connection of the gate, to itself, until it is released. */
function reserveThroughGate(reserve: (connection: number) => Promise<postgres.ReservedSql>, gate: Gate) {
  return new Promise<postgres.ReservedSql>((resolve, reject) => {
    const held = (connection: number) => reserve(connection).then((reserved) => new Promise<void>((released) => {
      const release = reserved.release;
      reserved.release = () => {
        release();
        released();
      };
      resolve(reserved);
    }));
    gate.run(held, 'reservation').catch(reject);
  });
}

/**
 * The same for a tagged query, which must stay the driver's own query object: it may be a
 * fragment of another query, and then it is never awaited itself. The driver sends a query when
 * it is first awaited (then, catch or finally); here that waits for a connection of the gate.
 * `on` makes the same query on that connection's pool, or returns null when it is the pool
 * the query was made on.
 */
function queryThroughGate(
  query: Promise<unknown>, on: (connection: number) => Promise<unknown> | null, gate: Gate,
): Promise<unknown> {
  const { then } = query;
  let answer: Promise<unknown> | null = null;
  const send = () => new Promise((resolve, reject) => void then.call(query, resolve, reject));
  const settle = () => (answer ??= gate.run(async (connection) => answered(await (on(connection) ?? send()))));
  query.then = ((onFulfilled, onRejected) => settle().then(onFulfilled, onRejected)) as Promise<unknown>['then'];
  query.catch = ((onRejected) => settle().catch(onRejected)) as Promise<unknown>['catch'];
  query.finally = ((onFinally) => settle().finally(onFinally)) as Promise<unknown>['finally'];
  return query;
}

/**
 * Every statement PostgreSQL answers ends with its command tag, which the driver keeps as the
 * result's `command`. A result without one was never answered: postgres 3.4.9 keeps a query
 * handed to a connection between its socket's error and close across the reconnection, and if
 * it is still the connection's current query there, the new connection's first ReadyForQuery
 * settles it with an empty result (read in the driver's code; docs/operations.md, "Driver
 * defects"). It is refused as a closed connection, so that an answer never reads as "no such
 * row" for a statement that did not run.
 */
export function answered<T>(result: T): T {
  const hasTag = (value: unknown) => typeof value === 'object' && value !== null && Object.hasOwn(value, 'command');
  const parts = hasTag(result) ? [result] : Array.isArray(result) ? result.filter(hasTag) : [];
  if (parts.some((part) => (part as { command: unknown }).command === null)) {
    throw connectionClosed('the driver settled a statement that the database never answered');
  }
  return result;
}

/** What the pool's own checks refuse with: the driver's code for a closed connection, 503 at the HTTP edge. */
function connectionClosed(message: string): Error {
  return Object.assign(new Error(message), { code: 'CONNECTION_CLOSED' });
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
 * cases the only repair from outside is a fresh pool, which openDatabase makes (noteFailure).
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
 * Connections of the handle, each a driver pool of its own, and the pieces of work the gate
 * sends down one connection at once (pipelined: the driver writes the queries given in one turn
 * of the event loop together). One connection per driver pool is what keeps postgres 3.4.9
 * fast over uptime: a pool of several, kept busy, keeps an empty slot in its queue of busy
 * connections for every query it ever served, which every later query searches; with one
 * connection that queue never holds more than it (docs/operations.md, "Driver defects";
 * test/storage/db.test.ts).
 */
const poolSize = 10;
const pipelineDepth = 4;

/** `onQuery` sees the text of every statement (never its parameters), for tests that compare paths. */
export function connectDatabase(
  url: string,
  options: Pick<PoolOptions, 'applicationName' | 'onQuery' | 'bounds' | 'prepare'> & { connections?: number } = {},
): Sql {
  const { applicationName = 'account-service', onQuery, bounds = unbounded, connections = poolSize } = options;
  return postgres(url, {
    ...sessionAttrs(url),
    ...(options.prepare === false ? { prepare: false } : {}),
    ...(onQuery === undefined ? {} : { debug: (connection: number, text: string) => onQuery(text, connection) }),
    max: connections,
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

/**
 * Errors that show new connections refused, not just one connection broken or slow: the breaker
 * opens at once. A connection attempt that timed out is checked first: on a busy machine one
 * can take longer than the bound while the database is fine.
 */
const refusingCodes = new Set(['DATABASE_DOWN', 'ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', '57P03']);

function refusesConnections(error: unknown): boolean {
  return refusingCodes.has((error as { code?: unknown } | null)?.code as string);
}
