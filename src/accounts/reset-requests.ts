import type { Sql, Transaction } from '../storage/db.ts';
import { describeError, type Logger } from '../log.ts';
import { resetCodeMail } from '../mail/messages.ts';
import { sealMail } from '../mail/outbox.ts';
import type { Sealer } from '../sealing.ts';
import { generateCode, hashCode } from './one-time-codes.ts';
import { issueResetCode } from './password-resets.ts';

/**
 * A password reset request is answered after it is only recorded: the same one row for every
 * address, so that neither the answer nor its timing nor the rows it writes tell whether the
 * address has an account. A worker resolves it moments later, after a random delay, and only
 * then is a code issued and mailed to an account that has the address (issueResetCode).
 */
export async function recordResetRequest(tx: Transaction, email: string, clientAddress: string, now: Date): Promise<void> {
  await tx`INSERT INTO reset_requests (address, client_address, requested_at) VALUES (${email}, ${clientAddress.slice(0, 64)}, ${now})`;
}

/**
 * Deletes requests recorded before `before` that no worker resolved (the database was away, or
 * every instance stopped): a code issued that late would expire at once. Returns how many.
 */
export async function deleteStaleResetRequests(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM reset_requests WHERE requested_at < ${before}`;
  return rows.count;
}

export type ResetResolverOptions = {
  sql: Sql;
  sealer: Sealer;
  log: Logger;
  codeTtlSeconds: number;
  /** Told after requests were resolved, so that the mail goes out. */
  onResolved: () => void;
  pollMs?: number;
  wakeJitterMs?: number;
  onError?: (error: unknown) => void;
};

export type ResetResolver = {
  /** Resolves waiting requests after a random delay of up to `wakeJitterMs`, so that the work is not timed from the request. */
  wakeLater(): void;
  stop(): Promise<void>;
};

/**
 * Resolves recorded requests one at a time, each in its own transaction; FOR UPDATE SKIP LOCKED
 * lets several instances share them. It also polls, for requests that another instance
 * recorded or that a stop or a database outage left behind.
 */
export function createResetResolver(options: ResetResolverOptions): ResetResolver {
  const { log, pollMs = 5_000, wakeJitterMs = 2_000 } = options;
  let running: Promise<void> | null = null;
  let wanted = false;
  let stopped = false;
  const run = (): void => {
    if (stopped) return;
    wanted = true;
    running ??= (async () => {
      while (wanted && !stopped) {
        wanted = false;
        let resolved = 0;
        try {
          while (!stopped && (await resolveNext(options))) resolved += 1;
        } catch (error) {
          // Most often the database is away; the next poll tries again.
          log.warn('resolving reset requests failed', describeError(error));
          options.onError?.(error);
        }
        if (resolved > 0) options.onResolved();
      }
    })().finally(() => {
      running = null;
      // A wake that arrived while the loop was finishing must not wait for the next poll.
      if (wanted) run();
    });
  };
  const timer = setInterval(run, pollMs);
  timer.unref();
  return {
    wakeLater() {
      setTimeout(run, Math.random() * wakeJitterMs).unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/** Resolves the oldest waiting request; false when none waits. */
async function resolveNext({ sql, sealer, codeTtlSeconds }: ResetResolverOptions): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [request] = await tx`
      DELETE FROM reset_requests WHERE id = (SELECT id FROM reset_requests ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING address, client_address, requested_at`;
    if (request === undefined) return false;
    const requestedAt = request.requested_at as Date;
    const clientAddress = request.client_address as string;
    // The code's life counts from the request, as the message says.
    const expiresAt = new Date(requestedAt.getTime() + codeTtlSeconds * 1000);
    const code = generateCode();
    const mail = sealMail(resetCodeMail(code, expiresAt, requestedAt, clientAddress), sealer);
    await issueResetCode(tx, request.address as string, hashCode(code), expiresAt, mail, clientAddress, requestedAt);
    return true;
  });
}
