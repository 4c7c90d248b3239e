import type { Sql } from '../storage/db.ts';

/**
 * The outbox's failed messages, for the operator: a message is failed once its attempts are
 * spent (outbox.ts), and keeps its sealed content and recipient for a week (the sweep), so
 * that it can be queued again. The list shows no recipient and no content: neither is needed
 * to decide on a retry, and the list may be pasted into a ticket.
 */
export type FailedMail = { id: string; kind: string; attempts: number; last_error: string | null; created_at: Date };

/** The failed messages, oldest first, at most `limit`. */
export async function listFailedMail(sql: Sql, limit: number): Promise<FailedMail[]> {
  return sql<FailedMail[]>`
    SELECT id::text, kind, attempts, last_error, created_at FROM outbox
    WHERE state = 'failed' ORDER BY id LIMIT ${limit}`;
}

/**
 * Queues failed messages again, due now with a fresh count of attempts: the one of `id`, or
 * every failed one (`id` null). Only failed rows change, so a retry cannot send twice a message
 * that is pending or sent. Returns the ids queued.
 */
export async function retryFailedMail(sql: Sql, id: string | null, now: Date): Promise<string[]> {
  const rows = await sql`
    UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ${now}, last_error = NULL
    WHERE state = 'failed' AND (${id}::bigint IS NULL OR id = ${id}::bigint) RETURNING id::text`;
  return rows.map((row) => row.id as string);
}
