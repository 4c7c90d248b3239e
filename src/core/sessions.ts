import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Account } from './accounts.ts';
import { insertEvents } from './security-events.ts';
import type { Sql, Transaction } from '../storage/db.ts';

/** Who acted: the client address and user agent a request came from, as a session records them. */
export type Client = { address: string; userAgent: string };

/**
 * Whether the session still exists. Read after the account row is locked (core/transaction.ts
 * lockAccountIfSessionLives), in a statement of its own, so that it sees what a transaction that held the lock
 * before (a password change, reset, deletion or sign-out) committed.
 */
export async function isSessionLive(tx: Transaction, accountId: string, sessionId: string): Promise<boolean> {
  const [row] = await tx`
    SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ${sessionId} AND account_id = ${accountId}) AS live`;
  return row!.live === true;
}

/** A live session as its owner sees it. */
export type Session = { id: string; createdAt: Date; lastUsedAt: Date; clientAddress: string; userAgent: string };
export type SessionTokens = { sessionId: string; refreshToken: string };

export type Rotation =
  /** A live token was spent ('rotated'), or a spent one retried within the window ('retried'). */
  | { outcome: 'rotated' | 'retried'; accountPublicId: string; sessionId: string; refreshToken: string }
  /** Unknown or expired, or its session has ended. */
  | { outcome: 'refused' }
  /** A spent token presented after the window, or after its successor was replaced: the caller ends the session. */
  | { outcome: 'reused'; accountId: string; sessionId: string };

/** A spent refresh token presented again within this time is a client's retry, not a theft. */
export const retryWindowSeconds = 10;
const maxUserAgentLength = 200;

/** Opaque, 256 random bits. Only its hash is stored. */
function generateRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

/** A fast hash suffices for 256 random bits, and the lookup needs determinism. */
export function hashRefreshToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/**
 * Starts a session for a password sign-in, in one statement: it locks the account row (step 2
 * of the lock order) if it still holds `checkedHash`, the hash the password was checked
 * against, then writes the session, its refresh token and the event (steps 3, 4, 6). A change,
 * reset or deletion that committed meanwhile changed or removed the row, which the lock sees
 * (the condition is checked again on the locked row), so no session starts after them. With
 * `upgradedHash`, the same password's hash at the current cost replaces the checked one.
 * Null when the account no longer holds that password; 'disabled' when an operator disabled it,
 * which is read from the locked row too, so that a sign-in racing a disable either starts its
 * session before the disable (which then ends it) or none. The session lives `ttlSeconds`,
 * however often it is refreshed.
 *
 * An account holds at most `maxSessions` live sessions: beyond that, the least recently used end
 * in the same statement, each with a `session-evicted` event (steps 3 and 6), so that sign-ins in
 * a loop cannot grow the table or the session list without bound, at no extra round trip. The
 * statement counts the sessions of its own snapshot: sign-ins that queued on the account row at
 * the same moment may each leave one more, and the next sign-in trims the account back to the cap.
 */
export async function startSession(
  sql: Sql | Transaction, accountId: string, checkedHash: string, upgradedHash: string | null,
  client: Client, now: Date, ttlSeconds: number, maxSessions: number,
): Promise<SessionTokens | 'disabled' | null> {
  const sessionId = randomUUID();
  const refreshToken = generateRefreshToken();
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  const { address, userAgent } = client;
  const evictedEvent =
    { account: sql`${accountId}::bigint`, type: 'session-evicted', clientAddress: address, now } as const;
  const signedInEvent = { account: sql`enabled.id`, type: 'signed-in', clientAddress: address, now } as const;
  const rows = await sql`
    WITH account AS (
      SELECT id, disabled_at IS NOT NULL AS disabled FROM accounts
      WHERE id = ${accountId} AND password_hash = ${checkedHash} AND activated_at IS NOT NULL FOR NO KEY UPDATE
    ), enabled AS (
      SELECT id FROM account WHERE NOT disabled
    ), upgraded AS (
      UPDATE accounts SET password_hash = ${upgradedHash}::text
      WHERE id = (SELECT id FROM enabled) AND ${upgradedHash}::text IS NOT NULL
    ), evicted AS (
      -- The new session is not among those counted (one snapshot): maxSessions - 1 stay besides it.
      DELETE FROM sessions WHERE id IN (
        SELECT id FROM sessions WHERE account_id = (SELECT id FROM enabled) AND expires_at > ${now}
        ORDER BY last_used_at DESC, created_at DESC OFFSET ${maxSessions - 1}
      )
      RETURNING id
    ), evicted_events AS (
      ${insertEvents(sql, { ...evictedEvent, session: sql`id` }, sql`FROM evicted`)}
    ), session AS (
      INSERT INTO sessions (id, account_id, created_at, last_used_at, expires_at, client_address, user_agent)
      SELECT ${sessionId}, id, ${now}, ${now}, ${expiresAt}, ${address.slice(0, 64)},
        ${userAgent.slice(0, maxUserAgentLength)}
      FROM enabled
      RETURNING id
    ), token AS (
      INSERT INTO refresh_tokens (token_hash, session_id, created_at)
      SELECT ${hashRefreshToken(refreshToken)}, id, ${now} FROM session
    ), signed_in AS (
      ${insertEvents(sql, { ...signedInEvent, session: sql`session.id` }, sql`FROM enabled, session`)}
      RETURNING 1
    )
    SELECT (SELECT disabled FROM account) AS disabled, EXISTS (SELECT 1 FROM signed_in) AS started`;
  if (rows[0]!.started === true) return { sessionId, refreshToken };
  return rows[0]!.disabled === true ? 'disabled' : null;
}

/**
 * Spends a refresh token and issues its successor (RFC 9700 §4.14) in one round trip, through
 * refresh_session (sql/008), which holds the rules: a live token rotates; a spent one within
 * the retry window, whose successor is still the live token, is a client's retry (that
 * successor stops working and a new one is issued); any other spent token is reuse, which the
 * caller answers by ending the session. Of concurrent calls, each waits for the account row,
 * so they serialise and the session stays one chain with one live token.
 */
export async function rotateRefreshToken(sql: Sql, presented: string, client: Client, now: Date): Promise<Rotation> {
  const refreshToken = generateRefreshToken();
  const [row] = await sql`
    SELECT outcome, account_id, public_id, session_id
    FROM refresh_session(
      ${hashRefreshToken(presented)}, ${hashRefreshToken(refreshToken)}, ${now},
      ${`${retryWindowSeconds} seconds`}::interval, ${client.address.slice(0, 64)},
      ${client.userAgent.slice(0, maxUserAgentLength)})`;
  const outcome = row!.outcome as Rotation['outcome'];
  if (outcome === 'refused') return { outcome };
  if (outcome === 'reused') {
    return { outcome, accountId: row!.account_id as string, sessionId: row!.session_id as string };
  }
  const [accountPublicId, sessionId] = [row!.public_id as string, row!.session_id as string];
  return { outcome, accountPublicId, sessionId, refreshToken };
}

/**
 * The account behind an access token, if its session still lives: one round trip that reads
 * the account and the session together, so that a revocation takes effect at once everywhere.
 */
export async function findSessionAccount(
  sql: Sql, accountPublicId: string, sessionId: string, now: Date,
): Promise<Account | null> {
  const [row] = await sql<Account[]>`
    SELECT a.id, a.public_id AS "publicId", a.name, a.email, a.phone, a.locale, a.activated_at AS "activatedAt",
      EXISTS (SELECT 1 FROM second_factors AS f WHERE f.account_id = a.id AND f.activated_at IS NOT NULL)
        AS "factorActive"
    FROM sessions s JOIN accounts a ON a.id = s.account_id
    WHERE s.id = ${sessionId} AND a.public_id = ${accountPublicId} AND s.expires_at > ${now}
      AND a.activated_at IS NOT NULL AND a.disabled_at IS NULL`;
  return row ?? null;
}

/**
 * The account and session a token names, for a revocation: by an access token's claims, or by
 * a refresh token, current or spent. Null when there is no such session (any more).
 */
export async function findSessionOwner(
  sql: Sql, by: { accountPublicId: string; sessionId: string } | { refreshToken: string },
): Promise<{ accountId: string; sessionId: string } | null> {
  const [row] =
    'refreshToken' in by
      ? await sql`
          SELECT s.id, s.account_id FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id
          WHERE r.token_hash = ${hashRefreshToken(by.refreshToken)}`
      : await sql`
          SELECT s.id, s.account_id FROM sessions s JOIN accounts a ON a.id = s.account_id
          WHERE s.id = ${by.sessionId} AND a.public_id = ${by.accountPublicId}`;
  return row === undefined ? null : { accountId: row.account_id as string, sessionId: row.id as string };
}

/** Deletes expired sessions, and spent refresh tokens older than `spentBefore`; returns how many of each. */
export async function deleteExpiredSessions(
  sql: Sql, now: Date, spentBefore: Date,
): Promise<{ sessions: number; spentTokens: number }> {
  const sessions = await sql`DELETE FROM sessions WHERE expires_at <= ${now}`;
  const spentTokens = await sql`DELETE FROM refresh_tokens WHERE spent_at < ${spentBefore}`;
  return { sessions: sessions.count, spentTokens: spentTokens.count };
}
