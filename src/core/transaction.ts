import type { Config } from '../config/config.ts';
import type { KeyedHashes } from './keyed-hashes.ts';
import type { Logger } from '../telemetry/log.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { PasswordHasher } from './passwords.ts';
import type { Mailer } from '../mail/templates.ts';
import type { Sealer } from './sealing.ts';
import { isSessionLive, type Client } from './sessions.ts';
import type { Sql, Transaction } from '../storage/db.ts';
import type { Webhooks } from '../webhooks/events.ts';

/**
 * The use cases: one function per thing a user does, each in one transaction of its own.
 *
 * THE LOCK ORDER. Every use case that writes takes its locks in this order, and only in this
 * order, so that two of them on one account queue instead of deadlocking:
 *
 *   1. per-address rows, taken by code requests, e-mail change requests and deletion only:
 *      name holds, then address quotas (an e-mail change: the account's own, then the address's);
 *   2. the account row, FOR NO KEY UPDATE (lockAccount below); a use case that needs two (an
 *      e-mail change request and the holder of its new address) locks them in id order;
 *   3. its sessions;
 *   4. their refresh tokens;
 *   5. its one-time codes, its second factor and recovery codes;
 *   6. its security events;
 *   7. the outbox and webhook events (inserts only, of rows no one else holds).
 *
 * The sign-in throttle's rows (login-throttle.ts) sit outside the order: a use case that clears
 * them (reset, deletion, unlock, e-mail change) does so after step 2, and the sign-in path,
 * which holds no account row, writes them one row per statement, so it never holds one while it
 * waits for another.
 *
 * Invariants that follow:
 * - FOR NO KEY UPDATE, not FOR UPDATE: an insert into sessions or security_events checks its
 *   foreign key with FOR KEY SHARE on the account row, which FOR UPDATE would block. That is
 *   the deadlock this order replaces (a revocation held a session and waited for the account
 *   row, a password change held the account row and waited for the session).
 * - Whatever a use case reads after step 2, in a later statement, sees every commit made by
 *   another use case on the account before: they all hold the account row while they write.
 *   So "end every session" deletes the sessions started just before, and "is my session still
 *   alive" is answered truthfully. A single statement cannot lock and then read fresh rows
 *   (it keeps the snapshot it started with), except through a PL/pgSQL function, whose every
 *   statement takes a fresh snapshot (sql/008, refresh_session).
 * - Deleting the account row upgrades the lock to FOR UPDATE; nothing else locks the row
 *   without taking step 2 first, so the upgrade waits for nobody who waits for it.
 *
 * A use case returns its outcome; only the HTTP layer turns outcomes into answers.
 */
export type UseCaseDeps = {
  sql: Sql;
  config: Config;
  clock: () => Date;
  log: Logger;
  passwords: PasswordHasher;
  sealer: Sealer;
  /** Renders and seals mail for the outbox (mail/templates.ts). */
  mailer: Mailer;
  /** Keyed hashes of addresses, names and client addresses, for the tables that count per key. */
  keys: KeyedHashes;
  outbox: { wake(): void; wakeLater(): void };
  /** The worker that resolves recorded registration and reset requests (request-resolver.ts). */
  addressRequests: { wakeLater(): void };
  /** Events for the application (src/webhooks/); made and queued only while WEBHOOK_URL is set. */
  webhooks: Webhooks;
  metrics: Metrics;
  /** Tells the owner of a sign-in from a new network and client (features/sign-in-notices); after the start. */
  announceSignIn(accountId: string, client: Client, way: 'password' | 'passkey' | 'provider' | 'code'): Promise<void>;
};

/** Defined with the sessions that record it (sessions.ts), and named here for the use cases. */
export type { Client };

/** Deadlock and serialization failure: the database chose this transaction to fail; it may run again. */
const retryableCodes = new Set(['40P01', '40001']);

/**
 * Runs `work` once more if the database failed it as a deadlock victim or a serialization
 * failure, and lets any other error (or a second failure) go to the error boundary. The lock
 * order makes deadlocks between use cases impossible; the retry covers what is outside the
 * order (the sweep, an operator's statement) so that the client does not pay for it.
 * `work` must be safe to run twice: a transaction or a statement, with no effect outside it.
 */
export async function retryOnce<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!retryableCodes.has((error as { code?: string } | null)?.code ?? '')) throw error;
    return work();
  }
}

/**
 * One transaction, retried once (retryOnce). Everything it writes commits together or not at all.
 * `work` may end it with `rollBack(outcome)`: nothing it wrote commits, and `outcome` is returned.
 */
export async function inTransaction<T>(
  sql: Sql,
  work: (tx: Transaction, rollBack: (outcome: T) => never) => Promise<T>,
): Promise<T> {
  const rollBack = (outcome: T): never => {
    throw new RolledBack(outcome);
  };
  try {
    return await retryOnce(() => sql.begin((tx) => work(tx, rollBack)) as Promise<T>);
  } catch (error) {
    if (error instanceof RolledBack) return error.outcome as T;
    throw error;
  }
}

/** Thrown through sql.begin, which rolls back on any error, to carry the outcome out. */
class RolledBack extends Error {
  readonly outcome: unknown;
  constructor(outcome: unknown) {
    super('rolled back');
    this.outcome = outcome;
  }
}

/** After a commit that queued mail and webhook events: their workers look now, not at their next poll. */
export function wakeWorkers(deps: Pick<UseCaseDeps, 'outbox' | 'webhooks'>): void {
  deps.outbox.wake();
  deps.webhooks.wake();
}

/**
 * Step 2 of the lock order: locks the active account row for the rest of the transaction.
 * False if the account is gone. With `passwordHash`, also false when the password was changed
 * or reset meanwhile: the condition is checked again on the row as it is once locked.
 */
export async function lockAccount(
  tx: Transaction, accountId: string, passwordHash: string | null = null,
): Promise<boolean> {
  const rows = await tx`
    SELECT 1 FROM accounts
    WHERE id = ${accountId} AND activated_at IS NOT NULL
      AND (${passwordHash}::text IS NULL OR password_hash = ${passwordHash})
    FOR NO KEY UPDATE`;
  return rows.count === 1;
}

/**
 * The account row of the lock order (lockAccount) for a signed-in caller, then whether its
 * session still lives: read after the lock, so that a password change, reset or sign-out that
 * ended it before is seen, and a request of an ended session changes nothing. False if either
 * is gone.
 */
export async function lockAccountIfSessionLives(
  tx: Transaction, caller: { account: { id: string }; sessionId: string },
): Promise<boolean> {
  return (await lockAccount(tx, caller.account.id)) && isSessionLive(tx, caller.account.id, caller.sessionId);
}
