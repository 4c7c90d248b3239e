import type { Account } from './accounts.ts';
import { findCode, hashCode, type CodePurpose, type FoundCode } from './one-time-codes.ts';
import { listEvents, type SecurityEvent } from './security-events.ts';
import { findSessionAccount, listSessions, type Session } from './sessions.ts';
import type { UseCaseDeps } from './transaction.ts';

/**
 * What requests read without writing: one statement each, outside any transaction. The HTTP
 * layer (core/auth.ts, core/codes.ts) and the routes read through here, never through the
 * domain folders themselves.
 */

/** The account behind an access token's claims, if its session still lives (sessions.ts findSessionAccount). */
export function findCaller(deps: UseCaseDeps, publicId: string, sessionId: string, now: Date): Promise<Account | null> {
  return findSessionAccount(deps.sql, publicId, sessionId, now);
}

export type LiveCode = FoundCode & { codeHash: Buffer };
export type CodeLookup = { outcome: 'unknown' } | { outcome: 'expired' } | { outcome: 'found'; code: LiveCode };

/**
 * A code of `purpose`: unknown, expired, or found with its hash. Unknown and expired codes, the
 * usual result of guessing, are answered from this one read. Looked up by hash: only hashes
 * are stored, and an index lookup on a SHA-256 value reveals nothing about which codes exist.
 */
export async function findLiveCode(deps: UseCaseDeps, purpose: CodePurpose, code: string): Promise<CodeLookup> {
  const codeHash = hashCode(code);
  const found = await findCode(deps.sql, purpose, codeHash);
  if (found === null) return { outcome: 'unknown' };
  if (found.expiresAt <= deps.clock()) return { outcome: 'expired' };
  return { outcome: 'found', code: { ...found, codeHash } };
}

/** The account's live sessions, the most recently used first, at most SESSIONS_PER_ACCOUNT of them. */
export function listLiveSessions(deps: UseCaseDeps, accountId: string): Promise<Session[]> {
  return listSessions(deps.sql, accountId, deps.clock(), deps.config.sessionsPerAccount);
}

/** The account's latest security events, newest first (security-events.ts listEvents). */
export function listRecentEvents(deps: UseCaseDeps, accountId: string): Promise<SecurityEvent[]> {
  return listEvents(deps.sql, accountId);
}
