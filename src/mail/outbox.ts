import { randomUUID } from 'node:crypto';
import type { Fragment, Sql, Transaction } from '../storage/db.ts';
import { createPollingWorker, type PollingSettings, type PollingWorker } from '../support/polling-worker.ts';
import { backoffMs, type Backoff } from '../support/queue.ts';
import type { Sealer } from '../core/sealing.ts';
import type { MailContent, OutgoingMail, UnaddressedMail } from './messages.ts';
import type { Mailer } from './templates.ts';
import { assertMailable, isPermanentFailure, type MailTransport } from './transport.ts';

/** wake() right after a commit that queued mail; wakeLater() for mail whose sending must not be timed. */
export type OutboxWorker = PollingWorker;

export type OutboxOptions = PollingSettings & Backoff & {
  sql: Sql;
  transport: MailTransport;
  sealer: Sealer;
  clock: () => Date;
  from: string;
  maxAttempts?: number;
  /** How long a claimed message stays this worker's before it is due again (defaultLeaseMs). */
  leaseMs?: number;
};

/** A message ready for the outbox table: encrypted, with the Message-ID it keeps across retries. */
export type SealedMail = { messageId: string; kind: string; sealed: Buffer };

/**
 * Writes the message in its reader's locale now, when it is queued: the outbox holds finished
 * content ({subject, text, html}, as before templates), so the worker sends what it finds.
 */
export function sealMail(mail: UnaddressedMail, mailer: Mailer): SealedMail {
  const messageId = `<${randomUUID()}@account-service>`;
  // The content may hold a code, so it is stored only encrypted, bound to its Message-ID.
  const content = Buffer.from(JSON.stringify(mailer.render(mail)));
  return { messageId, kind: mail.kind, sealed: mailer.sealer.seal(content, 'mail', messageId) };
}

/** Queues a message in the caller's transaction, so it exists exactly when the change that causes it does. */
export async function enqueueMail(tx: Transaction, mail: OutgoingMail, mailer: Mailer, now: Date): Promise<void> {
  await tx`${insertMail(tx, sealMail(mail, mailer), tx`${mail.to}::text`, now)}`;
}

/**
 * THE insert of queued mail, for every statement that queues it: once, or once for each row of
 * `source` (a FROM clause, and its WHERE), `recipient` being an expression over it.
 */
export function insertMail(
  sql: Sql | Transaction, mail: SealedMail, recipient: Fragment, now: Date, source: Fragment = sql``,
): Fragment {
  return sql`
    INSERT INTO outbox (message_id, kind, recipient, sealed_content, next_attempt_at, created_at)
    SELECT ${mail.messageId}, ${mail.kind}, ${recipient}, ${mail.sealed}, ${now}::timestamptz, ${now}::timestamptz
    ${source}`;
}

/**
 * Delivers queued messages one at a time, in three steps that each hold a connection only for
 * one statement: claim a due message (a lease, sql/009), send it with no connection and no lock
 * held, then record the outcome under the same lease. Several instances share one queue: SKIP LOCKED
 * makes each claim its own message. A message is sent once unless its worker dies or loses the
 * database between sending and settling; then the lease runs out and it is sent again, with
 * the same Message-ID, so that mail systems can drop the copy.
 */
export function createOutboxWorker(options: OutboxOptions): OutboxWorker {
  const { log, onError, pollMs, wakeJitterMs } = options;
  const next = () => deliverNext(options);
  return createPollingWorker({ next, log, failureMessage: 'outbox worker failed', onError, pollMs, wakeJitterMs });
}

/** A message claimed for one attempt: only the holder of `lease` may record its outcome. */
type Claimed = {
  id: string; lease: string; messageId: string; kind: string; recipient: string; sealed: Buffer; attempts: number;
};

/** How the attempt ended: sent, to be tried again at `retryAt`, or given up. */
type Outcome = { sent: true } | { sent: false; reason: string; retryAt: Date | null };

/**
 * The lease lasts longer than the longest send (transport.ts: 10 s to connect, 10 s for the
 * greeting, 30 s per command), so that a slow send is not claimed twice.
 */
export const defaultLeaseMs = 5 * 60_000;

async function deliverNext(options: OutboxOptions): Promise<boolean> {
  const { sql, transport, sealer, clock, log, from } = options;
  const claimed = await claimNext(sql, clock(), options.leaseMs ?? defaultLeaseMs);
  if (claimed === null) return false;
  const { id, kind, attempts } = claimed;
  const opened = sealer.open(claimed.sealed, 'mail', claimed.messageId);
  if (opened === null) {
    const reason = 'content cannot be decrypted with the configured ENCRYPTION_KEYS';
    await recordOutcome(sql, claimed, { sent: false, reason, retryAt: null }, clock());
    log.error('outbox message failed', { id, kind, reason: 'undecryptable' });
    return true;
  }
  const content = JSON.parse(opened.plaintext.toString('utf8')) as MailContent;
  let outcome: Outcome;
  try {
    assertMailable(claimed.recipient);
    await transport.send({ ...content, messageId: claimed.messageId, from, to: claimed.recipient });
    outcome = { sent: true };
  } catch (error) {
    const reason = errorSummary(error);
    const final = isPermanentFailure(error) || attempts >= (options.maxAttempts ?? 12);
    const retryAt = final ? null : new Date(clock().getTime() + backoffMs(attempts, options));
    outcome = { sent: false, reason, retryAt };
  }
  const settled = await recordOutcome(sql, claimed, outcome, clock());
  if (!settled) {
    // The lease ran out during the send and another worker claimed the message, or the account
    // was deleted meanwhile: this worker no longer owns it.
    log.warn('outbox message settled elsewhere', { id, kind, attempts });
  } else if (outcome.sent) {
    log.info('outbox message sent', { id, kind, attempts });
  } else if (outcome.retryAt === null) {
    log.error('outbox message failed', { id, kind, attempts, reason: outcome.reason });
  } else {
    const nextAttemptAt = outcome.retryAt.toISOString();
    log.warn('outbox message deferred', { id, kind, attempts, reason: outcome.reason, next_attempt_at: nextAttemptAt });
  }
  return true;
}

/**
 * Claims the message due first, counting the attempt. The lease moves next_attempt_at past the
 * send, so the message is due again only if this worker never settles it.
 */
async function claimNext(sql: Sql, now: Date, leaseMs: number): Promise<Claimed | null> {
  const lease = randomUUID();
  const [row] = await sql`
    UPDATE outbox SET lease = ${lease}, attempts = attempts + 1, next_attempt_at = ${new Date(now.getTime() + leaseMs)}
    WHERE id = (
      SELECT id FROM outbox
      WHERE state = 'pending' AND next_attempt_at <= ${now}
      ORDER BY next_attempt_at, id
      LIMIT 1
      FOR UPDATE SKIP LOCKED)
    RETURNING id, message_id, kind, recipient, sealed_content, attempts`;
  if (row === undefined) return null;
  const { id, message_id: messageId, kind, recipient, sealed_content: sealed, attempts } = row;
  return { id, lease, messageId, kind, recipient, sealed, attempts };
}

/** Records the outcome if the lease still holds; false if it does not (the message is no longer this worker's). */
async function recordOutcome(sql: Sql, claimed: Claimed, outcome: Outcome, now: Date): Promise<boolean> {
  const { id, lease } = claimed;
  let rows;
  if (outcome.sent && claimed.kind === 'account-deleted') {
    // The notice of a deleted account is the last trace of it: the whole row goes once sent.
    rows = await sql`DELETE FROM outbox WHERE id = ${id} AND lease = ${lease}`;
  } else if (outcome.sent) {
    // The content is erased once sent: a registration code must not outlive its delivery. So is
    // the address: sent mail keeps no trace of whom it went to (the sweep deletes the row later).
    rows = await sql`
      UPDATE outbox
      SET state = 'sent', lease = NULL, sealed_content = NULL, recipient = NULL, last_error = NULL, sent_at = ${now}
      WHERE id = ${id} AND lease = ${lease}`;
  } else if (outcome.retryAt === null) {
    rows = await sql`
      UPDATE outbox SET state = 'failed', lease = NULL, last_error = ${outcome.reason}
      WHERE id = ${id} AND lease = ${lease}`;
  } else {
    rows = await sql`
      UPDATE outbox SET lease = NULL, last_error = ${outcome.reason}, next_attempt_at = ${outcome.retryAt}
      WHERE id = ${id} AND lease = ${lease}`;
  }
  return rows.count === 1;
}

/** How long a sent or failed message stays, from when it was queued: an operator's week to look into a failure. */
export const finishedMailRetentionMs = 7 * 24 * 3600 * 1000;

/** Deletes sent and failed messages queued before `before`; returns how many. Pending ones stay until they finish. */
export async function deleteFinishedMail(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM outbox WHERE state <> 'pending' AND created_at < ${before}`;
  return rows.count;
}

function errorSummary(error: unknown): string {
  type Described = { message?: unknown; responseCode?: unknown; code?: unknown };
  const { message, responseCode, code } = (error ?? {}) as Described;
  return [code, responseCode, message].filter((part) => part !== undefined).join(' ').slice(0, 500);
}
