import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Sql } from '../storage/db.ts';
import { createPollingWorker, type PollingSettings } from '../support/polling-worker.ts';
import { backoffMs, countWaitingAndFailed, type Backoff, type QueueCounts } from '../support/queue.ts';
import { webhookHeaders } from './signing.ts';

export type WebhookCounts = QueueCounts;

export type WebhookWorker = {
  /** Looks for due events now, such as right after a commit that queued one. */
  wake(): void;
  /** The counts of the last refresh, for /metrics without a query per scrape; null before the first. */
  counts(): WebhookCounts | null;
  /** Reads the counts again; the worker does after each round, the sweep every minute. */
  refreshCounts(): Promise<void>;
  /** Cuts a delivery under way (it is retried) and resolves once the worker is idle for good. */
  stop(): Promise<void>;
};

export type WebhookDeliveryOptions = PollingSettings & Backoff & {
  sql: Sql;
  url: string;
  keys: Buffer[];
  clock: () => Date;
  /** The whole attempt, connecting to the end of the answer's headers. */
  timeoutMs?: number;
  maxAttempts?: number;
};

/** 5 s doubling to a cap of 4 h: 18 attempts, the last about 25.7 h after the first. */
export const webhookRetryDefaults = { maxAttempts: 18, backoffBaseMs: 5_000, backoffCapMs: 4 * 3600 * 1000 };
const defaultTimeoutMs = 5_000;
/** A claim outlives the attempt by this much; a worker that died lets its event go after it. */
const leaseMarginMs = 10_000;

type Settings = WebhookDeliveryOptions &
  Required<Pick<WebhookDeliveryOptions, 'timeoutMs' | 'maxAttempts' | 'backoffBaseMs' | 'backoffCapMs'>>;
type Claimed = {
  id: string; webhookId: string; type: string; account: string; body: string; attempts: number; claimedUntil: Date;
};

/**
 * Delivers queued events one at a time: claim (a lease, committed at once), POST with no
 * connection or lock held, then mark. A crash between POST and mark sends the event again
 * with the same webhook-id once the lease ends: at least once, never lost.
 */
export function createWebhookWorker(options: WebhookDeliveryOptions): WebhookWorker {
  const { sql, log, onError, pollMs } = options;
  const settings: Settings = { ...webhookRetryDefaults, timeoutMs: defaultTimeoutMs, ...withoutUndefined(options) };
  let cached: WebhookCounts | null = null;
  const inFlight = new AbortController();

  const refreshCounts = async () => {
    cached = await countWaitingAndFailed(sql, 'webhook_events');
  };

  const worker = createPollingWorker({
    next: () => deliverNext(settings, inFlight.signal),
    afterRound: async (handled) => {
      if (handled > 0 || cached === null) await refreshCounts();
    },
    log,
    failureMessage: 'webhook worker failed',
    onError,
    pollMs,
  });
  return {
    wake: worker.wake,
    counts: () => cached,
    refreshCounts,
    async stop() {
      const stopped = worker.stop();
      // After the worker is told to stop, so that the cut delivery is the last one.
      inFlight.abort();
      await stopped;
    },
  };
}

/** Claims, sends and marks the next due event; false when none is due. */
async function deliverNext(settings: Settings, signal: AbortSignal): Promise<boolean> {
  const { sql, clock, log, url, keys, timeoutMs } = settings;
  const event = await claimNext(sql, clock(), timeoutMs + leaseMarginMs);
  if (event === null) return false;
  const attempts = event.attempts + 1;
  const headers = webhookHeaders(keys, event.webhookId, event.body, clock());
  const outcome = await post(url, event.body, headers, timeoutMs, signal);
  const logged = { webhook_id: event.webhookId, type: event.type, attempts };
  if (outcome.ok) {
    if (await markDelivered(sql, event, attempts, clock())) {
      log.info('webhook delivered', { ...logged, status: outcome.status });
    }
    else log.warn('webhook delivered after its claim ran out; it may be sent again', logged);
    return true;
  }
  if (attempts >= settings.maxAttempts) {
    // Kept as a row in state failed, for the operator to see and queue again (docs/webhooks.md).
    await sql`
      UPDATE webhook_events
      SET state = 'failed', attempts = ${attempts}, last_error = ${outcome.reason}, claimed_until = NULL
      WHERE id = ${event.id} AND claimed_until = ${event.claimedUntil}`;
    log.error('webhook failed; no more attempts', { ...logged, reason: outcome.reason });
    return true;
  }
  const next = new Date(clock().getTime() + backoffMs(attempts, settings));
  // The account's later events, which wait for this one, are not due before it either: a
  // claim would read past them at every look until it goes (sql/016).
  await sql`
    WITH deferred AS (
      UPDATE webhook_events
      SET attempts = ${attempts}, last_error = ${outcome.reason}, next_attempt_at = ${next}, claimed_until = NULL
      WHERE id = ${event.id} AND claimed_until = ${event.claimedUntil}
      RETURNING id, account)
    UPDATE webhook_events later SET next_attempt_at = ${next}
    FROM deferred
    WHERE later.account = deferred.account AND later.state = 'pending' AND later.id > deferred.id
      AND later.next_attempt_at < ${next}`;
  log.warn('webhook deferred', { ...logged, reason: outcome.reason, next_attempt_at: next.toISOString() });
  return true;
}

/**
 * The oldest due event whose account has no earlier event pending: events of one account leave
 * in the order they were queued, and a later one waits, unclaimed, while an earlier one is
 * retried. It is not due meanwhile either (sql/016, and the deferral above), so that this
 * reads past few waiting events however long a receiver is down. SKIP LOCKED lets instances
 * claim side by side; the lease then keeps the event theirs without a transaction held open.
 */
async function claimNext(sql: Sql, now: Date, leaseMs: number): Promise<Claimed | null> {
  const claimedUntil = new Date(now.getTime() + leaseMs);
  const [row] = await sql`
    UPDATE webhook_events SET claimed_until = ${claimedUntil}
    WHERE id = (
      SELECT e.id FROM webhook_events e
      WHERE e.state = 'pending' AND e.next_attempt_at <= ${now}
        AND (e.claimed_until IS NULL OR e.claimed_until <= ${now})
        AND NOT EXISTS (
          SELECT 1 FROM webhook_events p WHERE p.account = e.account AND p.state = 'pending' AND p.id < e.id)
      ORDER BY e.next_attempt_at, e.id
      LIMIT 1
      FOR UPDATE SKIP LOCKED)
    RETURNING id, webhook_id, type, account, body, attempts, claimed_until`;
  if (row === undefined) return null;
  return {
    id: row.id as string,
    webhookId: row.webhook_id as string,
    type: row.type as string,
    account: row.account as string,
    body: row.body as string,
    attempts: row.attempts as number,
    claimedUntil: row.claimed_until as Date,
  };
}

/**
 * The body is erased once delivered, as a sent mail's content is. account.deleted is the last
 * event of its account: with it go the delivered rows that still name the account (a failed
 * one stays, for the operator).
 */
async function markDelivered(sql: Sql, event: Claimed, attempts: number, now: Date): Promise<boolean> {
  if (event.type === 'account.deleted') {
    const rows = await sql`
      DELETE FROM webhook_events
      WHERE (id = ${event.id} AND claimed_until = ${event.claimedUntil})
        OR (account = ${event.account} AND state = 'delivered')
      RETURNING id`;
    return rows.some((row) => row.id === event.id);
  }
  const rows = await sql`
    UPDATE webhook_events
    SET state = 'delivered', body = NULL, attempts = ${attempts}, last_error = NULL, claimed_until = NULL,
      delivered_at = ${now}
    WHERE id = ${event.id} AND claimed_until = ${event.claimedUntil}`;
  return rows.count === 1;
}

type Outcome = { ok: true; status: number } | { ok: false; reason: string };

/**
 * One POST. Only the status is read: once it is known the answer is destroyed, its body unread
 * and its socket closed, so that the body never reaches a log or the database, and a receiver
 * that answers 200 MiB, or trickles a byte a second, costs no CPU, memory or socket past the
 * attempt's bound (three answers of 200 MiB, read, would cost 2.8 s of CPU). Redirects are not
 * followed (a 3xx is retried like any other non-2xx).
 */
function post(
  url: string, body: string, headers: Record<string, string>, timeoutMs: number, signal: AbortSignal,
): Promise<Outcome> {
  return new Promise((resolve) => {
    const request = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, {
      method: 'POST',
      headers: {
        ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'account-service',
      },
      signal,
    });
    // One bound for the whole attempt, however slowly a receiver trickles its answer.
    const deadline = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on('response', (response) => {
      clearTimeout(deadline);
      response.destroy();
      const status = response.statusCode ?? 0;
      resolve(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, reason: `HTTP ${status}` });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(deadline);
      resolve({ ok: false, reason: (error.code ?? error.message).slice(0, 200) });
    });
    request.end(body);
  });
}


/** Options a caller left undefined fall back to the defaults instead of overriding them. */
function withoutUndefined<T extends object>(options: T): T {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as T;
}

/** Deletes delivered events (only their id, type, account and times remain) delivered before `before`. */
export async function deleteDeliveredWebhooks(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM webhook_events WHERE state = 'delivered' AND delivered_at < ${before}`;
  return rows.count;
}
