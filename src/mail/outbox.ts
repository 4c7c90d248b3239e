import { randomUUID } from 'node:crypto';
import type { Sql, Transaction } from '../storage/db.ts';
import { describeError, type Logger } from '../log.ts';
import type { Sealer } from '../sealing.ts';
import type { MailContent, OutgoingMail, UnaddressedMail } from './messages.ts';
import { isPermanentFailure, type MailTransport } from './transport.ts';

export type OutboxWorker = {
  /** Asks the worker to look for due messages now, such as right after a commit. */
  wake(): void;
  /**
   * The same, after a random delay of up to `wakeJitterMs`. For messages whose sending must not
   * be timed from the request that queued them: the delivery makes the service busier for a
   * moment, and a stranger who times a request right after a reset request would otherwise see
   * whether that address got mail, that is whether it has an account.
   */
  wakeLater(): void;
  /** Resolves once no delivery is under way and none will start. */
  stop(): Promise<void>;
};

export type OutboxOptions = {
  sql: Sql;
  transport: MailTransport;
  sealer: Sealer;
  clock: () => Date;
  log: Logger;
  from: string;
  pollMs?: number;
  wakeJitterMs?: number;
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** Told of errors that stopped a round, such as a database that went away. */
  onError?: (error: unknown) => void;
};

/** A message ready for the outbox table: encrypted, with the Message-ID it keeps across retries. */
export type SealedMail = { messageId: string; kind: string; sealed: Buffer };

export function sealMail(mail: UnaddressedMail, sealer: Sealer): SealedMail {
  // The content may hold a code, so it is stored only encrypted.
  return { messageId: `<${randomUUID()}@account-service>`, kind: mail.kind, sealed: sealer.seal(JSON.stringify(mail.content)) };
}

/** Queues a message in the caller's transaction, so it exists exactly when the change that causes it does. */
export async function enqueueMail(tx: Transaction, mail: OutgoingMail, sealer: Sealer, now: Date): Promise<void> {
  const { messageId, kind, sealed } = sealMail(mail, sealer);
  await tx`
    INSERT INTO outbox (message_id, kind, recipient, sealed_content, next_attempt_at, created_at)
    VALUES (${messageId}, ${kind}, ${mail.to}, ${sealed}, ${now}, ${now})`;
}

/**
 * Delivers queued messages one at a time. Each is locked with FOR UPDATE SKIP LOCKED while
 * it is sent, so several instances share one queue and each message is sent by one of them.
 */
export function createOutboxWorker(options: OutboxOptions): OutboxWorker {
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
        try {
          while (!stopped && (await deliverNext(options))) wanted = false;
        } catch (error) {
          // Most often the database is away; the next poll tries again.
          log.warn('outbox worker failed', describeError(error));
          options.onError?.(error);
        }
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
    wake: run,
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

async function deliverNext(options: OutboxOptions): Promise<boolean> {
  const { sql, transport, sealer, clock, log, from } = options;
  return sql.begin(async (tx) => {
    const [row] = await tx`
      SELECT id, message_id, kind, recipient, sealed_content, attempts
      FROM outbox
      WHERE state = 'pending' AND next_attempt_at <= ${clock()}
      ORDER BY next_attempt_at, id
      LIMIT 1
      FOR UPDATE SKIP LOCKED`;
    if (row === undefined) return false;
    const attempts = (row.attempts as number) + 1;
    const opened = sealer.open(row.sealed_content as Buffer);
    if (opened === null) {
      await markFailed(tx, row.id, attempts, 'content cannot be decrypted with the configured TOKEN_SECRET');
      log.error('outbox message failed', { id: row.id, kind: row.kind, reason: 'undecryptable' });
      return true;
    }
    const content = JSON.parse(opened) as MailContent;
    try {
      await transport.send({ ...content, messageId: row.message_id, from, to: row.recipient });
    } catch (error) {
      const reason = errorSummary(error);
      if (isPermanentFailure(error) || attempts >= (options.maxAttempts ?? 12)) {
        await markFailed(tx, row.id, attempts, reason);
        log.error('outbox message failed', { id: row.id, kind: row.kind, attempts, reason });
      } else {
        const next = new Date(clock().getTime() + backoffMs(attempts, options));
        await tx`UPDATE outbox SET attempts = ${attempts}, last_error = ${reason}, next_attempt_at = ${next} WHERE id = ${row.id}`;
        log.warn('outbox message deferred', { id: row.id, kind: row.kind, attempts, reason, next_attempt_at: next.toISOString() });
      }
      return true;
    }
    // The notice of a deleted account is the last trace of it: the whole row goes once sent.
    if (row.kind === 'account-deleted') {
      await tx`DELETE FROM outbox WHERE id = ${row.id}`;
      log.info('outbox message sent', { id: row.id, kind: row.kind, attempts });
      return true;
    }
    // The content is erased once sent: a registration code must not outlive its delivery. So is
    // the address: sent mail keeps no trace of whom it went to (the sweep deletes the row later).
    await tx`
      UPDATE outbox SET state = 'sent', attempts = ${attempts}, sealed_content = NULL, recipient = NULL, last_error = NULL, sent_at = ${clock()}
      WHERE id = ${row.id}`;
    log.info('outbox message sent', { id: row.id, kind: row.kind, attempts });
    return true;
  });
}

async function markFailed(tx: Transaction, id: string, attempts: number, reason: string): Promise<void> {
  await tx`UPDATE outbox SET state = 'failed', attempts = ${attempts}, last_error = ${reason} WHERE id = ${id}`;
}

/** Exponential backoff: base, 2×base, 4×base … up to the cap. */
export function backoffMs(attempts: number, options: Pick<OutboxOptions, 'backoffBaseMs' | 'backoffCapMs'>): number {
  const base = options.backoffBaseMs ?? 5_000;
  const cap = options.backoffCapMs ?? 3_600_000;
  return Math.min(cap, base * 2 ** (attempts - 1));
}

/** How long a sent or failed message stays, counted from when it was queued: an operator's week to look into a failure. */
export const finishedMailRetentionMs = 7 * 24 * 3600 * 1000;

/** Deletes sent and failed messages queued before `before`; returns how many. Pending ones stay until they finish. */
export async function deleteFinishedMail(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM outbox WHERE state <> 'pending' AND created_at < ${before}`;
  return rows.count;
}

function errorSummary(error: unknown): string {
  const { message, responseCode, code } = (error ?? {}) as { message?: unknown; responseCode?: unknown; code?: unknown };
  return [code, responseCode, message].filter((part) => part !== undefined).join(' ').slice(0, 500);
}
