import type { Sql, Transaction } from '../../storage/db.ts';

/**
 * What an operator reads of accounts (the admin command and API). The operator is trusted: an
 * unknown account is a plain "not found", and these reads are never on a path a stranger takes.
 */

/** An active account as an operator names it; pending registrations are not accounts yet. */
export type AccountRef = {
  id: string; publicId: string; name: string; email: string; locale: string | null; disabled: boolean;
};

export type AccountStatus = 'active' | 'disabled';

export type AccountSummary = {
  id: string;
  name: string;
  email: string;
  status: AccountStatus;
  created_at: string;
  disabled_reason: string | null;
};

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The account with this name, address (any case) or public id; null if none. */
export async function findAccountRef(sql: Sql | Transaction, identifier: string): Promise<AccountRef | null> {
  const byId = uuid.test(identifier) ? identifier : null;
  const [row] = await sql<AccountRef[]>`
    SELECT id, public_id AS "publicId", name, email, locale, disabled_at IS NOT NULL AS disabled FROM accounts
    WHERE activated_at IS NOT NULL
      AND (name = ${identifier} OR lower(email) = lower(${identifier}) OR public_id = ${byId}::uuid)`;
  return row ?? null;
}

/** The account's state for `find`: the row, its factor, its live sessions and its last sign-in. */
export async function describeAccount(sql: Sql, id: string, now: Date) {
  const [row] = await sql`
    SELECT a.public_id, a.name, a.email, a.phone, a.activated_at, a.disabled_at, a.disabled_reason,
      EXISTS (SELECT 1 FROM second_factors f WHERE f.account_id = a.id AND f.activated_at IS NOT NULL) AS second_factor,
      (SELECT count(*)::int FROM sessions s WHERE s.account_id = a.id AND s.expires_at > ${now}) AS live_sessions,
      (SELECT count(*)::int FROM passkeys p WHERE p.account_id = a.id) AS passkeys,
      (SELECT max(occurred_at) FROM security_events e WHERE e.account_id = a.id AND e.type = 'signed-in')
        AS last_sign_in
    FROM accounts a WHERE a.id = ${id}`;
  return row ?? null;
}

/**
 * The sign-in throttle on these identifiers (keyed hashes): the lowest budget left (null: full,
 * no failure counted) and the client networks blocked now, with the latest end of a block.
 */
export async function throttleState(sql: Sql, identifiers: Buffer[], now: Date) {
  const [row] = await sql`
    SELECT (SELECT min(tokens) FROM login_budgets WHERE identifier_key IN ${sql(identifiers)}) AS budget_left,
      count(*)::int AS blocked_networks, max(blocked_until) AS blocked_until
    FROM login_delays WHERE identifier_key IN ${sql(identifiers)} AND blocked_until > ${now}`;
  return {
    budget_left: row!.budget_left === null ? null : Math.floor(row!.budget_left as number),
    blocked_networks: row!.blocked_networks as number,
    blocked_until: (row!.blocked_until as Date | null)?.toISOString() ?? null,
  };
}

export type AccountFilter = {
  status: AccountStatus | null; createdAfter: Date | null; createdBefore: Date | null; limit: number;
  cursor: string | null;
};

/**
 * Active accounts, newest first (by activation, then id), `limit` of them after `cursor` (the
 * public id of the account the previous page ended with: keyset paging, so that a page costs the same however deep).
 */
export async function listAccounts(
  sql: Sql, filter: AccountFilter,
): Promise<{ accounts: AccountSummary[]; next: string | null }> {
  const { status, createdAfter, createdBefore, limit, cursor } = filter;
  const rows = await sql`
    SELECT a.public_id, a.name, a.email, a.activated_at, a.disabled_reason FROM accounts a
    WHERE a.activated_at IS NOT NULL
      AND (${status}::text IS NULL OR (a.disabled_at IS NOT NULL) = (${status}::text = 'disabled'))
      AND (${createdAfter}::timestamptz IS NULL OR a.activated_at >= ${createdAfter}::timestamptz)
      AND (${createdBefore}::timestamptz IS NULL OR a.activated_at < ${createdBefore}::timestamptz)
      AND (${cursor}::uuid IS NULL
        OR (a.activated_at, a.id) < (SELECT activated_at, id FROM accounts WHERE public_id = ${cursor}::uuid))
    ORDER BY a.activated_at DESC, a.id DESC LIMIT ${limit + 1}`;
  const accounts = rows.slice(0, limit).map((row) => ({
    id: row.public_id as string,
    name: row.name as string,
    email: row.email as string,
    status: (row.disabled_reason === null ? 'active' : 'disabled') as AccountStatus,
    created_at: (row.activated_at as Date).toISOString(),
    disabled_reason: row.disabled_reason as string | null,
  }));
  return { accounts, next: rows.length > limit ? accounts[limit - 1]!.id : null };
}

/** The account's latest `limit` events, newest first, with who acted and why. */
export async function listOperatorEvents(sql: Sql, id: string, limit: number) {
  const rows = await sql`
    SELECT type, occurred_at, client_address, session_id, actor, reason FROM security_events
    WHERE account_id = ${id} ORDER BY occurred_at DESC, id DESC LIMIT ${limit}`;
  return rows.map((row) => ({
    type: row.type as string,
    occurred_at: (row.occurred_at as Date).toISOString(),
    client_address: row.client_address as string,
    session_id: row.session_id as string | null,
    actor: (row.actor as string | null) ?? 'client',
    reason: row.reason as string | null,
  }));
}
