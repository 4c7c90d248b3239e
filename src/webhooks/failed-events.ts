import type { Sql } from '../storage/db.ts';

/**
 * Failed webhook events, for the operator: an event is failed once its attempts are spent
 * (delivery.ts), and keeps its body until it is delivered, so that it can be queued again.
 * The list shows the event's type and account, never its body.
 */
export type FailedWebhook = {
  id: string; webhook_id: string; type: string; account: string; attempts: number; last_error: string | null;
  created_at: Date;
};

/** The failed events, oldest first, at most `limit`. */
export async function listFailedWebhooks(sql: Sql, limit: number): Promise<FailedWebhook[]> {
  return sql<FailedWebhook[]>`
    SELECT id::text, webhook_id, type, account, attempts, last_error, created_at FROM webhook_events
    WHERE state = 'failed' ORDER BY id LIMIT ${limit}`;
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
    WHERE state = 'failed' AND (${id}::bigint IS NULL OR id = ${id}::bigint) RETURNING id::text`;
  return rows.map((row) => row.id as string);
}
