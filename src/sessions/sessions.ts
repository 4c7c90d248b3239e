import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Account } from '../accounts/accounts.ts';
import type { Sql, Transaction } from '../storage/db.ts';
import { recordEvent } from '../accounts/security-events.ts';

/** A live session as its owner sees it. */
export type Session = { id: string; createdAt: Date; lastUsedAt: Date; clientAddress: string; userAgent: string };
/** The client a sign-in or refresh came from. */
export type Client = { address: string; userAgent: string };
export type SessionTokens = { sessionId: string; refreshToken: string };

export type Rotation =
  | { outcome: 'rotated'; accountPublicId: string; sessionId: string; refreshToken: string }
  /** Unknown, expired, or spent within the retry window: refused, and the session (if any) lives on. */
  | { outcome: 'refused' }
  /** A spent token presented after the retry window: the session was revoked. */
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

/** Starts a session for a password sign-in; it lives `ttlSeconds` from now, however often it is refreshed. */
export async function startSession(tx: Transaction, accountId: string, client: Client, now: Date, ttlSeconds: number): Promise<SessionTokens> {
  const sessionId = randomUUID();
  const refreshToken = generateRefreshToken();
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  await tx`
    INSERT INTO sessions (id, account_id, created_at, last_used_at, expires_at, client_address, user_agent)
    VALUES (${sessionId}, ${accountId}, ${now}, ${now}, ${expiresAt}, ${client.address.slice(0, 64)}, ${client.userAgent.slice(0, maxUserAgentLength)})`;
  await tx`INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (${hashRefreshToken(refreshToken)}, ${sessionId}, ${now})`;
  return { sessionId, refreshToken };
}

/**
 * Spends a refresh token and issues its successor (RFC 9700 §4.14). A token spent before is
 * evidence that two parties hold the session, so the session is revoked, unless it was spent
 * within the retry window: a client whose answer was lost retries with the same token.
 */
export async function rotateRefreshToken(sql: Sql, presented: string, client: Client, now: Date): Promise<Rotation> {
  return sql.begin(async (tx) => {
    // The session row is locked first, and then the token is read in a statement of its own,
    // which sees whatever a transaction that held the lock before committed. Concurrent
    // rotations of one session thus queue, and exactly one spends the token. Every revocation
    // deletes the session row first as well: the same lock order, so no deadlock, and a
    // rotation that waited for a revocation finds nothing and is refused.
    const tokenHash = hashRefreshToken(presented);
    const locked = await tx`
      SELECT s.id FROM sessions s WHERE s.id = (SELECT session_id FROM refresh_tokens WHERE token_hash = ${tokenHash})
      FOR UPDATE`;
    if (locked.count === 0) return { outcome: 'refused' } as const;
    const [row] = await tx`
      SELECT r.session_id, r.spent_at, s.account_id, s.expires_at, a.public_id
      FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id JOIN accounts a ON a.id = s.account_id
      WHERE r.token_hash = ${tokenHash}`;
    if (row === undefined || (row.expires_at as Date) <= now) return { outcome: 'refused' } as const;
    const sessionId = row.session_id as string;
    const spentAt = row.spent_at as Date | null;
    if (spentAt !== null) {
      if (now.getTime() - spentAt.getTime() <= retryWindowSeconds * 1000) return { outcome: 'refused' } as const;
      await tx`DELETE FROM sessions WHERE id = ${sessionId}`;
      await recordEvent(tx, row.account_id as string, 'session-revoked', client.address, sessionId, now);
      return { outcome: 'reused', accountId: row.account_id as string, sessionId } as const;
    }
    const refreshToken = generateRefreshToken();
    await tx`UPDATE refresh_tokens SET spent_at = ${now} WHERE token_hash = ${tokenHash}`;
    await tx`INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (${hashRefreshToken(refreshToken)}, ${sessionId}, ${now})`;
    await tx`
      UPDATE sessions SET last_used_at = ${now}, client_address = ${client.address.slice(0, 64)}, user_agent = ${client.userAgent.slice(0, maxUserAgentLength)}
      WHERE id = ${sessionId}`;
    return { outcome: 'rotated', accountPublicId: row.public_id as string, sessionId, refreshToken } as const;
  });
}

/**
 * The account behind an access token, if its session still lives: one round trip that reads
 * the account and the session together, so that a revocation takes effect at once everywhere.
 */
export async function findSessionAccount(sql: Sql, accountPublicId: string, sessionId: string, now: Date): Promise<Account | null> {
  const [row] = await sql<Account[]>`
    SELECT a.id, a.public_id AS "publicId", a.name, a.email, a.phone, a.password_hash AS "passwordHash", a.activated_at AS "activatedAt"
    FROM sessions s JOIN accounts a ON a.id = s.account_id
    WHERE s.id = ${sessionId} AND a.public_id = ${accountPublicId} AND s.expires_at > ${now} AND a.activated_at IS NOT NULL`;
  return row ?? null;
}

/** The account's live sessions, the most recently used first. */
export async function listSessions(sql: Sql, accountId: string, now: Date): Promise<Session[]> {
  return sql<Session[]>`
    SELECT id, created_at AS "createdAt", last_used_at AS "lastUsedAt", client_address AS "clientAddress", user_agent AS "userAgent"
    FROM sessions WHERE account_id = ${accountId} AND expires_at > ${now}
    ORDER BY last_used_at DESC, created_at DESC`;
}

/** Revokes one session of the account; false if it has none with this id. */
export async function revokeSession(sql: Sql | Transaction, accountId: string, sessionId: string): Promise<boolean> {
  const rows = await sql`DELETE FROM sessions WHERE id = ${sessionId} AND account_id = ${accountId}`;
  return rows.count === 1;
}

/** Revokes every session of the account; returns their ids. */
export async function revokeAllSessions(sql: Sql | Transaction, accountId: string): Promise<string[]> {
  const rows = await sql`DELETE FROM sessions WHERE account_id = ${accountId} RETURNING id`;
  return rows.map((row) => row.id as string);
}

/**
 * Ends every session of the account but `keptSessionId` (an e-mail change keeps the session that
 * asked for it); their refresh tokens go with them. Returns the ids of the sessions it ended.
 */
export async function endSessionsExcept(tx: Transaction, accountId: string, keptSessionId: string): Promise<string[]> {
  const rows = await tx`DELETE FROM sessions WHERE account_id = ${accountId} AND id <> ${keptSessionId} RETURNING id`;
  return rows.map((row) => row.id as string);
}

/** Revokes the session an access token names; null if it is gone already. */
export async function revokeSessionByAccessToken(sql: Sql | Transaction, accountPublicId: string, sessionId: string): Promise<{ accountId: string; sessionId: string } | null> {
  const [row] = await sql`
    DELETE FROM sessions WHERE id = ${sessionId} AND account_id = (SELECT id FROM accounts WHERE public_id = ${accountPublicId})
    RETURNING id, account_id`;
  return row === undefined ? null : { accountId: row.account_id as string, sessionId: row.id as string };
}

/** Revokes the session a refresh token (current or spent) belongs to; null if the token is unknown. */
export async function revokeSessionByRefreshToken(sql: Sql | Transaction, token: string): Promise<{ accountId: string; sessionId: string } | null> {
  const [row] = await sql`
    DELETE FROM sessions WHERE id = (SELECT session_id FROM refresh_tokens WHERE token_hash = ${hashRefreshToken(token)})
    RETURNING id, account_id`;
  return row === undefined ? null : { accountId: row.account_id as string, sessionId: row.id as string };
}

/** Deletes expired sessions, and spent refresh tokens older than `spentBefore`; returns how many of each. */
export async function deleteExpiredSessions(sql: Sql, now: Date, spentBefore: Date): Promise<{ sessions: number; spentTokens: number }> {
  const sessions = await sql`DELETE FROM sessions WHERE expires_at <= ${now}`;
  const spentTokens = await sql`DELETE FROM refresh_tokens WHERE spent_at < ${spentBefore}`;
  return { sessions: sessions.count, spentTokens: spentTokens.count };
}

/** Live sessions of every account, for the metrics. */
export async function countLiveSessions(sql: Sql, now: Date): Promise<number> {
  const [row] = await sql`SELECT count(*)::int AS n FROM sessions WHERE expires_at > ${now}`;
  return row!.n as number;
}
