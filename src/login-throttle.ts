import { createHash } from 'node:crypto';
import type { Sql, Transaction } from './db.ts';

/** Failures allowed before each further attempt must wait. */
export const freeFailures = 5;
/** The longest wait, in seconds: 15 minutes. */
export const maxDelaySeconds = 900;

/** The wait after `failures` consecutive failures: none up to four, then 1 s, 2 s, 4 s … up to 15 min. */
export function delaySeconds(failures: number): number {
  return failures < freeFailures ? 0 : Math.min(maxDelaySeconds, 2 ** (failures - freeFailures));
}

/** Failures of a known account count on the account, whichever of its names was used. */
export function throttleKey(accountId: string | null, username: string): string {
  if (accountId !== null) return `account:${accountId}`;
  // Hashed so that arbitrary client input is never stored as it came.
  return `name:${createHash('sha256').update(username.toLowerCase()).digest('hex')}`;
}

/** Seconds until the key may try again; 0 when it may now. */
export async function throttleWaitSeconds(sql: Sql, key: string, now: Date): Promise<number> {
  const [row] = await sql`SELECT blocked_until FROM login_failures WHERE key = ${key}`;
  const until = row?.blocked_until as Date | null | undefined;
  return until == null || until <= now ? 0 : Math.ceil((until.getTime() - now.getTime()) / 1000);
}

/** Counts one more failure atomically, so concurrent failures on several instances all count. */
export async function recordFailure(sql: Sql, key: string, now: Date): Promise<void> {
  const [row] = await sql`
    INSERT INTO login_failures (key, failures, updated_at) VALUES (${key}, 1, ${now})
    ON CONFLICT (key) DO UPDATE SET failures = login_failures.failures + 1, updated_at = ${now}
    RETURNING failures`;
  const delay = delaySeconds(row!.failures as number);
  if (delay > 0) {
    await sql`UPDATE login_failures SET blocked_until = ${new Date(now.getTime() + delay * 1000)} WHERE key = ${key}`;
  }
}

export async function clearFailures(sql: Sql | Transaction, key: string): Promise<void> {
  await sql`DELETE FROM login_failures WHERE key = ${key}`;
}

/** Forgets failures that stopped a day ago and no longer block. */
export async function deleteStaleFailures(sql: Sql, now: Date): Promise<number> {
  const rows = await sql`
    DELETE FROM login_failures
    WHERE updated_at < ${new Date(now.getTime() - 24 * 3600 * 1000)} AND (blocked_until IS NULL OR blocked_until < ${now})`;
  return rows.count;
}
