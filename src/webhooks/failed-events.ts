import type { Sql } from '../storage/db.ts';

/**
 * Failed webhook events, for the operator: an event is failed once its attempts are spent
 * (delivery.ts), and keeps its body until it is delivered, so that it can be queued again.
 * The list shows the event's type and account, never its body.
 */
export type FailedWebhook = {
  id: string; webhook_id: string; type: string; account: string; attempts: number; last_error: string | null;
  created_at: string;
};

/** The failed events, oldest first, at most `limit`. */
export async function listFailedWebhooks(sql: Sql, limit: number): Promise<FailedWebhook[]> {
  const rows = await sql`
    SELECT id, webhook_id, type, account, attempts, last_error, created_at FROM webhook_events
    WHERE state = 'failed' ORDER BY id LIMIT ${limit}`;
  return rows.map((row) => ({
    id: String(row.id),
    webhook_id: row.webhook_id as string,
    type: row.type as string,
    account: row.account as string,
    attempts: row.attempts as number,
    last_error: row.last_error as string | null,
    created_at: (row.created_at as Date).toISOString(),
  }));
}

/**
 * Queues failed events again, due now with a fresh count of attempts: the one of `id`, or
 * every failed one (`id` null). Only failed rows change. The worker delivers an account's
 * events in id order, so a retried event goes before that account's later pending ones.
 */
export async function retryFailedWebhooks(sql: Sql, id: string | null, now: Date): Promise<string[]> {
  const rows = await sql`
    UPDATE webhook_events
    SET state = 'pending', attempts = 0, next_attempt_at = ${now}, last_error = NULL, claimed_until = NULL
    WHERE state = 'failed' AND (${id}::bigint IS NULL OR id = ${id}::bigint) RETURNING id`;
  return rows.map((row) => String(row.id));
}
