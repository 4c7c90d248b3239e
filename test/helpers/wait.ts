import { setTimeout as delay } from 'node:timers/promises';
import type postgres from 'postgres';

/**
 * Polls `check` until it holds, failing after `timeoutMs`. The deadline is kept on the monotonic
 * clock, so that a test that stops `Date.now` (clock.ts) still fails here rather than hanging.
 */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('condition not reached in time');
    await delay(25);
  }
}

/**
 * The barrier before counting mail: waits until every recorded registration and reset request
 * is resolved and no message waits in the outbox. A request's resolution deletes its row and
 * queues its mail in one transaction, and the outbox marks a message sent only once the SMTP
 * server accepted it (the test server stores it before it accepts), so from then on every
 * message that what came before causes has arrived: a count taken now is final, until the next
 * request. One statement reads the three tables, in one snapshot.
 */
export async function untilQueuesDrained(sql: postgres.Sql, timeoutMs = 10_000): Promise<void> {
  await waitUntil(async () => {
    const [row] = await sql`
      SELECT (SELECT count(*) FROM registration_requests) + (SELECT count(*) FROM reset_requests)
        + (SELECT count(*) FROM sign_in_code_requests)
        + (SELECT count(*) FROM outbox WHERE state = 'pending') AS waiting`;
    return Number(row!.waiting) === 0;
  }, timeoutMs);
}

/**
 * The barrier after failed sign-ins, whose events are written after the answer (core/password-check.ts
 * recordWrongPassword): waits until the account named `name` has at least `count` 'sign-in-failed' events.
 */
export async function untilFailedSignIns(sql: postgres.Sql, name: string, count: number): Promise<void> {
  await waitUntil(async () => {
    const [row] = await sql`
      SELECT count(*)::int AS n FROM security_events e JOIN accounts a ON a.id = e.account_id
      WHERE a.name = ${name} AND e.type = 'sign-in-failed'`;
    return row!.n >= count;
  });
}
