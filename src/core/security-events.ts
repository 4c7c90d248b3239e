import type { Fragment, Sql, Transaction } from '../storage/db.ts';

export type EventType =
  | 'activated' | 'signed-in' | 'sign-in-failed' | 'password-changed' | 'reset-requested' | 'password-reset'
  | 'session-revoked' | 'signed-out-everywhere' | 'refresh-retried' | 'refresh-token-reused'
  /** A sign-in beyond SESSIONS_PER_ACCOUNT ended the least recently used session. */
  | 'session-evicted'
  | 'totp-enabled' | 'totp-disabled' | 'recovery-code-used' | 'email-change-requested' | 'email-changed'
  | 'passkey-added' | 'passkey-removed' | 'passkey-renamed' | 'identity-linked' | 'identity-removed'
  /** A passkey's sign counter did not grow: a clone signal; the sign-in was refused. */
  | 'passkey-counter-regressed'
  /** The owner exported the account (features/export), or turned sign-in notices off or on. */
  | 'account-exported' | 'notices-off' | 'notices-on'
  /** Operators' actions (features/operators/actions.ts, disable.ts): actor 'operator', with a reason. */
  | 'account-disabled' | 'account-enabled' | 'sessions-ended' | 'reset-forced' | 'throttle-cleared';

/** `actor` null: the client of a request, from `clientAddress`; 'operator': an operator (admin/). */
export type SecurityEvent = {
  type: EventType;
  occurredAt: Date;
  clientAddress: string;
  sessionId: string | null;
  actor: 'operator' | null;
};

/** How many events GET /acc/me/events shows. */
export const shownEvents = 50;
/**
 * Kinds of event that someone other than the owner can cause as often as they like: a failed
 * sign-in needs only the name, a reset request only the address; a passkey's rename, a refresh
 * token retried within its window and a sign-in past the session cap any session or password
 * holder (a thief's too). Together they fill at most `shownStrangerEvents` of the view, so that they never
 * push the owner's own events out of it, and they are kept a week (strangerEventRetentionDays).
 */
export const strangerKinds: readonly EventType[] = [
  'sign-in-failed', 'reset-requested', 'passkey-renamed', 'refresh-retried', 'session-evicted',
];
export const shownStrangerEvents = 10;

/**
 * Records an event of the account, in the caller's transaction when there is one. With
 * `accountId` null (a name that belongs to no account) the same statement runs and writes
 * nothing, so that a failed sign-in on an unknown name costs what one on a known name costs.
 */
export async function recordEvent(
  sql: Sql | Transaction, accountId: string | null, type: EventType, clientAddress: string, sessionId: string | null,
  now: Date,
): Promise<void> {
  const event = { account: sql`id`, type, clientAddress, session: sql`${sessionId}::uuid`, now };
  await sql`${insertEvents(sql, event, sql`FROM accounts WHERE id = ${accountId}`)}`;
}

/** Records an operator's action on the account (features/operators/actions.ts), in the caller's transaction. */
export async function recordOperatorEvent(
  tx: Transaction, accountId: string, type: EventType, operator: OperatorAct & { address: string }, now: Date,
): Promise<void> {
  const { address, reason } = operator;
  const row = { account: tx`id`, type, clientAddress: address, session: null, now, operator: { reason } };
  await tx`${insertEvents(tx, row, tx`FROM accounts WHERE id = ${accountId}`)}`;
}

/**
 * THE insert of security events, for every statement that writes them: one row for each row of
 * `source` (a FROM clause, and its WHERE), `account` and `session` being expressions over it.
 */
export function insertEvents(sql: Sql | Transaction, event: EventRow, source: Fragment): Fragment {
  return sql`
    INSERT INTO security_events (account_id, type, occurred_at, client_address, session_id, actor, reason)
    SELECT ${event.account}, ${event.type}::text, ${event.now}::timestamptz, ${event.clientAddress.slice(0, 64)}::text,
      ${event.session ?? sql`NULL`}::uuid, ${event.operator === undefined ? null : 'operator'}::text,
      ${event.operator?.reason ?? null}::text ${source}`;
}

/** `operator`: an operator acted, for this reason (null: none given); absent, the client of a request did. */
export type EventRow = {
  account: Fragment; type: EventType; clientAddress: string; session: Fragment | null; now: Date;
  operator?: OperatorAct;
};
export type OperatorAct = { reason: string | null };

/**
 * How long the strangers' kinds are kept, unless EVENT_RETENTION_DAYS is shorter. Anyone can
 * make them, as fast as the sign-in throttle and the reset quota allow, and the view shows only
 * the latest few: a week bounds what a stranger can make the table hold for one account.
 */
export const strangerEventRetentionDays = 7;

/** Deletes events from before `before`, and the strangers' kinds from before `strangersBefore`; returns how many. */
export async function deleteOldEvents(sql: Sql, before: Date, strangersBefore: Date): Promise<number> {
  const old = await sql`DELETE FROM security_events WHERE occurred_at < ${before}`;
  // strangerKinds written out, so that the planner matches the partial index (sql/029).
  const strangers = await sql`
    DELETE FROM security_events
    WHERE type IN ('sign-in-failed', 'reset-requested', 'passkey-renamed', 'refresh-retried', 'session-evicted')
      AND occurred_at < ${strangersBefore}`;
  return old.count + strangers.count;
}
