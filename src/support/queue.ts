import type { Sql } from '../storage/db.ts';

/**
 * What the two queues, the outbox (mail/outbox.ts) and the webhook events (webhooks/delivery.ts),
 * share: how long a failed attempt waits, and how their rows are counted for the metrics.
 */

/** Where the backoff starts and where it stops growing; unset, 5 s and 1 h. */
export type Backoff = { backoffBaseMs?: number; backoffCapMs?: number };

/** Exponential backoff: base, 2×base, 4×base … up to the cap. */
export function backoffMs(attempts: number, options: Backoff): number {
  const base = options.backoffBaseMs ?? 5_000;
  const cap = options.backoffCapMs ?? 3_600_000;
  return Math.min(cap, base * 2 ** (attempts - 1));
}

export type QueueCounts = { pending: number; failed: number };

/**
 * The rows of a queue (the outbox, or the webhook events) waiting to go and given up on, each
 * counted through its partial index: never the sent or delivered rows kept for the retention
 * week, which a count by state would read whole (sql/016_index_every_lookup.sql).
 */
export async function countWaitingAndFailed(sql: Sql, table: 'outbox' | 'webhook_events'): Promise<QueueCounts> {
  const [row] = await sql`
    SELECT (SELECT count(*) FROM ${sql(table)} WHERE state = 'pending')::int AS pending,
           (SELECT count(*) FROM ${sql(table)} WHERE state = 'failed')::int AS failed`;
  return { pending: row!.pending as number, failed: row!.failed as number };
}
