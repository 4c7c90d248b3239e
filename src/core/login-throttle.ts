import type { Sql, Transaction } from '../storage/db.ts';

/** Failures allowed from one client address before each further attempt must wait. */
export const freeFailures = 5;
/** The longest wait, in seconds: 15 minutes. */
export const maxDelaySeconds = 900;
/** How long a client network that proved an identifier's password stays known to it: 30 days. */
export const knownClientMs = 30 * 24 * 3600 * 1000;

/** Whose attempts are counted: the typed identifier, and the client address it came from. */
export type ThrottleKeys = { identifier: Buffer; client: Buffer };

/** The wait after `failures` consecutive failures: none up to four, then 1 s, 2 s, 4 s … up to 15 min. */
export function delaySeconds(failures: number): number {
  return failures < freeFailures ? 0 : Math.min(maxDelaySeconds, 2 ** (failures - freeFailures));
}

/**
 * Reserves one password check, or answers how many seconds to wait. The check is counted as
 * a failure before it is made, in one statement per level, so that parallel requests can
 * never check more passwords than the allowance (a success gives it back, see `settleSuccess`).
 * Level 2 first: it is the cheaper one to give back when level 1 refuses. `tokenTaken` says
 * whether the budget gave a token (a known network checks without one, see reserveBudget):
 * only a token taken is ever given back.
 */
export type Reservation = { wait: number; tokenTaken: boolean };

export async function reserveAttempt(sql: Sql, keys: ThrottleKeys, perHour: number, now: Date): Promise<Reservation> {
  const budget = await reserveBudget(sql, keys, perHour, now);
  if (budget.wait > 0) return budget;
  const wait = await reserveDelay(sql, keys, now);
  if (wait > 0 && budget.tokenTaken) await refundBudget(sql, keys.identifier, perHour);
  return { wait, tokenTaken: budget.tokenTaken };
}

/**
 * The password was right: the client's failures are forgotten, the budget gets its token back,
 * and the client's network becomes known to the identifier (see reserveBudget).
 *
 * One statement per row, as every write outside a transaction here (the lock order,
 * transaction.ts): as one statement it held the budget row while it waited for the delay row
 * that a reset held, and deadlocked with it.
 */
export async function settleSuccess(
  sql: Sql, keys: ThrottleKeys, perHour: number, now: Date, tokenTaken: boolean,
): Promise<void> {
  await sql`DELETE FROM login_delays WHERE identifier_key = ${keys.identifier} AND client_key = ${keys.client}`;
  await sql`
    INSERT INTO login_known_clients AS k (identifier_key, client_key, last_success_at)
    VALUES (${keys.identifier}, ${keys.client}, ${now})
    ON CONFLICT (identifier_key, client_key) DO UPDATE SET last_success_at = ${now}`;
  if (tokenTaken) await refundBudget(sql, keys.identifier, perHour);
}

async function reserveDelay(sql: Sql, { identifier, client }: ThrottleKeys, now: Date): Promise<number> {
  // The block a row earns is written with the reservation, from its new count of failures.
  const reserved = await sql`
    INSERT INTO login_delays AS d (identifier_key, client_key, failures, blocked_until, updated_at)
    VALUES (${identifier}, ${client}, 1, NULL, ${now})
    ON CONFLICT (identifier_key, client_key) DO UPDATE
    SET failures = d.failures + 1,
        blocked_until = CASE WHEN d.failures + 1 < ${freeFailures} THEN NULL
          ELSE ${now}::timestamptz
            + make_interval(secs => least(${maxDelaySeconds}, 2 ^ (d.failures + 1 - ${freeFailures}))) END,
        updated_at = ${now}
    WHERE d.blocked_until IS NULL OR d.blocked_until <= ${now}
    RETURNING 1`;
  if (reserved.count === 1) return 0;
  const [row] = await sql`
    SELECT blocked_until FROM login_delays WHERE identifier_key = ${identifier} AND client_key = ${client}`;
  return secondsUntil(row?.blocked_until as Date | undefined, now);
}

/**
 * Takes a token of the identifier's budget. An empty budget refuses, except to a client network
 * that proved this identifier's password in the last 30 days: strangers who spend the budget
 * from anywhere, knowing the name and the address, must not lock the owner out. Such a check
 * takes no token (the budget stays empty for everyone else, and nothing is given back for it),
 * and level 1 still bounds it: someone on the owner's network guesses at its pace. One
 * statement either way.
 *
 * Instances share the budget but each reads its own clock. `updated_at` only moves forward, so
 * refills count time once: an instance whose clock is behind refills nothing until it catches
 * up, and alternating between skewed instances gains no guesses (test/e2e/clock-skew.test.ts).
 */
async function reserveBudget(
  sql: Sql, { identifier, client }: ThrottleKeys, perHour: number, now: Date, exemptKnown = true,
): Promise<Reservation> {
  const refilled = sql`
    least(${perHour},
      b.tokens + greatest(0, extract(epoch FROM ${now}::timestamptz - b.updated_at)) * ${perHour / 3600})`;
  const [reserved] = await sql`
    WITH taken AS (
      INSERT INTO login_budgets AS b (identifier_key, tokens, updated_at) VALUES (${identifier}, ${perHour - 1}, ${now})
      ON CONFLICT (identifier_key) DO UPDATE SET tokens = ${refilled} - 1, updated_at = greatest(b.updated_at, ${now})
      WHERE ${refilled} >= 1
      RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM taken) AS taken, ${exemptKnown} AND EXISTS (
      SELECT 1 FROM login_known_clients
      WHERE identifier_key = ${identifier} AND client_key = ${client}
        AND last_success_at > ${new Date(now.getTime() - knownClientMs)}) AS known`;
  if (reserved!.taken === true) return { wait: 0, tokenTaken: true };
  if (reserved!.known === true) return { wait: 0, tokenTaken: false };
  const [row] = await sql`SELECT ${refilled} AS tokens FROM login_budgets AS b WHERE identifier_key = ${identifier}`;
  const missing = 1 - ((row?.tokens as number | undefined) ?? 0);
  return { wait: Math.max(1, Math.ceil((missing * 3600) / perHour)), tokenTaken: false };
}

/**
 * Reserves one second-factor guess (a TOTP or recovery code) from `identifier`'s budget, or
 * answers the seconds to wait. No network is exempt: known networks let the owner's *password*
 * through a spent budget, never unlimited factor guesses (otherwise 40 networks that once signed
 * in check hundreds of codes a minute). A right code gives its token back (refundBudget).
 */
export async function reserveFactorGuess(sql: Sql, identifier: Buffer, perHour: number, now: Date): Promise<number> {
  return (await reserveBudget(sql, { identifier, client: identifier }, perHour, now, false)).wait;
}

export async function refundBudget(sql: Sql, identifier: Buffer, perHour: number): Promise<void> {
  await sql`UPDATE login_budgets SET tokens = least(${perHour}, tokens + 1) WHERE identifier_key = ${identifier}`;
}

function secondsUntil(until: Date | undefined, now: Date): number {
  return until === undefined ? 1 : Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
}

/**
 * Forgets every failure counted on these identifiers, and the networks known to them: a
 * password reset is the owner's way back, and a network that knew the old password (a thief's,
 * perhaps) must not stay past the budget.
 */
export async function clearThrottle(tx: Transaction, identifiers: Buffer[]): Promise<void> {
  await tx`WITH ${throttleDeletionStatements(tx, identifiers)} SELECT 1`;
}

/**
 * The common table expressions that delete every throttle row of these identifiers (delays,
 * budget, known networks), for a statement that does more in the same round trip, such as the
 * deletion's: the one list of the throttle's tables.
 */
export function throttleDeletionStatements(tx: Transaction, identifiers: Buffer[]) {
  return tx`
    delays AS (DELETE FROM login_delays WHERE identifier_key IN ${tx(identifiers)}),
    budgets AS (DELETE FROM login_budgets WHERE identifier_key IN ${tx(identifiers)}),
    known AS (DELETE FROM login_known_clients WHERE identifier_key IN ${tx(identifiers)})`;
}

/**
 * Makes the client network known to each identifier, as a right password does (settleSuccess).
 * A password reset does this for the network that completed it: the reset proved the mailbox,
 * so the owner signs in from there afterwards even while a stranger keeps the budgets spent.
 */
export async function rememberClient(
  tx: Sql | Transaction, identifiers: Buffer[], client: Buffer, now: Date,
): Promise<void> {
  // In one order, so that two statements over the same rows (a sign-in and a reset) never deadlock.
  const rows = [...identifiers].sort(Buffer.compare)
    .map((key) => ({ identifier_key: key, client_key: client, last_success_at: now }));
  await tx`
    INSERT INTO login_known_clients ${tx(rows)}
    ON CONFLICT (identifier_key, client_key) DO UPDATE SET last_success_at = excluded.last_success_at`;
}

/** Whether the client network proved this identifier's password, or completed a reset, in the last 30 days. */
export async function isKnownClient(tx: Transaction, keys: ThrottleKeys, now: Date): Promise<boolean> {
  const [row] = await tx`
    SELECT EXISTS (
      SELECT 1 FROM login_known_clients
      WHERE identifier_key = ${keys.identifier} AND client_key = ${keys.client}
        AND last_success_at > ${new Date(now.getTime() - knownClientMs)}) AS known`;
  return row!.known as boolean;
}

/**
 * Forgets the failures counted on these identifiers (delays and budget), as an operator's
 * unlock does; the networks known to them stay known, as the owner's own.
 */
export async function clearFailures(tx: Transaction, identifiers: Buffer[]): Promise<void> {
  await tx`
    WITH delays AS (DELETE FROM login_delays WHERE identifier_key IN ${tx(identifiers)})
    DELETE FROM login_budgets WHERE identifier_key IN ${tx(identifiers)}`;
}

/**
 * Forgets the networks known to these identifiers: an address the account leaves (an e-mail
 * change) must not vouch for whoever holds it next: networks seeded on an address would
 * otherwise guess past its next holder's spent budget.
 */
export async function forgetKnownClients(tx: Transaction, identifiers: Buffer[]): Promise<void> {
  await tx`DELETE FROM login_known_clients WHERE identifier_key IN ${tx(identifiers)}`;
}

/**
 * Forgets delays that stopped a day ago, budgets untouched for an hour (full again by then), and
 * networks known for 30 days.
 */
export async function deleteStaleThrottleRows(sql: Sql, now: Date): Promise<number> {
  const delays = await sql`
    DELETE FROM login_delays
    WHERE updated_at < ${new Date(now.getTime() - 24 * 3600 * 1000)}
      AND (blocked_until IS NULL OR blocked_until < ${now})`;
  const budgets = await sql`DELETE FROM login_budgets WHERE updated_at < ${new Date(now.getTime() - 3600 * 1000)}`;
  const known = await sql`
    DELETE FROM login_known_clients WHERE last_success_at <= ${new Date(now.getTime() - knownClientMs)}`;
  return delays.count + budgets.count + known.count;
}
