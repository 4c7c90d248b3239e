// Rows the bench needs by the thousand, inserted in bulk: accounts, pending registrations with
// their codes, and sessions with their refresh tokens, as the service's own paths would store them.
import { randomBytes, randomUUID } from 'node:crypto';
import { generateCode, hashCode } from '../../src/core/one-time-codes.ts';
import { hashRefreshToken } from '../../src/core/sessions.ts';
import type { Sql } from '../../src/storage/db.ts';
import type { WrkRequest } from './wrk.ts';

/** Rows a statement: well under PostgreSQL's 65,535 parameters at seven columns. */
const batch = 5_000;

async function insertInBatches<T>(rows: T[], insert: (rows: T[]) => Promise<void>): Promise<void> {
  for (let at = 0; at < rows.length; at += batch) await insert(rows.slice(at, at + batch));
}

let serial = 0;
/** A name prefix no earlier call used, so that seeds never collide. */
const unique = (prefix: string) => `${prefix}-${(serial += 1)}`;

export type SeededAccount = { id: string; publicId: string; name: string };

/** Active accounts named `<prefix>-<n>-<i>`, each with the password `bench-password` if that is what `passwordHash` holds. */
export async function seedAccounts(sql: Sql, prefix: string, count: number, passwordHash: string): Promise<SeededAccount[]> {
  const stem = unique(prefix);
  const rows = Array.from({ length: count }, (_, index) => ({ name: `${stem}-${index}`, email: `${stem}-${index}@bench.example`, password_hash: passwordHash, activated_at: new Date() }));
  const accounts: SeededAccount[] = [];
  await insertInBatches(rows, async (slice) => {
    const inserted = await sql`INSERT INTO accounts ${sql(slice)} RETURNING id, public_id, name`;
    accounts.push(...inserted.map((row) => ({ id: row.id as string, publicId: row.public_id as string, name: row.name as string })));
    // As an activation leaves it: the first sign-in from the network that registered is not announced.
    const events = inserted.map((row) => ({ account_id: row.id, type: 'activated', occurred_at: new Date(), client_address: '127.0.0.1' }));
    await sql`INSERT INTO security_events ${sql(events)}`;
  });
  return accounts;
}

/** Pending registrations, each with a live registration code; returns the codes. */
export async function seedPendingCodes(sql: Sql, count: number, passwordHash: string): Promise<string[]> {
  const stem = unique('pending');
  const codes = Array.from({ length: count }, generateCode);
  const now = new Date();
  const expires_at = new Date(now.getTime() + 3600_000);
  const rows = codes.map((code, index) => ({ index, code, account: { name: `${stem}-${index}`, email: `${stem}-${index}@bench.example`, password_hash: passwordHash, expires_at } }));
  await insertInBatches(rows, async (slice) => {
    const ids = (await sql`INSERT INTO accounts ${sql(slice.map((row) => row.account))} RETURNING id`).map((row) => row.id as string);
    const codeRows = ids.map((account_id, index) => ({ code_hash: hashCode(slice[index]!.code), purpose: 'registration', account_id, expires_at, created_at: now }));
    await sql`INSERT INTO one_time_codes ${sql(codeRows)}`;
  });
  return codes;
}

/** A live password-reset code for each account id given; returns the codes in the same order. */
export async function seedResetCodes(sql: Sql, accountIds: string[]): Promise<string[]> {
  const now = new Date();
  const expires_at = new Date(now.getTime() + 3600_000);
  const codes = accountIds.map(() => generateCode());
  const rows = accountIds.map((account_id, index) => ({ code_hash: hashCode(codes[index]!), purpose: 'reset', account_id, expires_at, created_at: now }));
  await insertInBatches(rows, async (slice) => {
    await sql`INSERT INTO one_time_codes ${sql(slice)}`;
  });
  return codes;
}

export type SeededSession = { accountId: string; sessionId: string; refreshToken: string };

/** One live session for each account id given (ids may repeat), as a password sign-in starts it. */
export async function seedSessions(sql: Sql, accountIds: string[]): Promise<SeededSession[]> {
  const now = new Date();
  const expires_at = new Date(now.getTime() + 3600_000);
  const sessions = accountIds.map((accountId) => ({ accountId, sessionId: randomUUID(), refreshToken: randomBytes(32).toString('base64url') }));
  await insertInBatches(sessions, async (slice) => {
    await sql`INSERT INTO sessions ${sql(slice.map((session) => ({ id: session.sessionId, account_id: session.accountId, created_at: now, last_used_at: now, expires_at, client_address: '127.0.0.1', user_agent: 'bench' })))}`;
    await sql`INSERT INTO refresh_tokens ${sql(slice.map((session) => ({ token_hash: hashRefreshToken(session.refreshToken), session_id: session.sessionId, created_at: now })))}`;
  });
  return sessions;
}

/** Accounts as seedAccounts makes them, each signed in with one live session. */
export async function seedSignedIn(sql: Sql, prefix: string, count: number, passwordHash: string): Promise<Array<{ account: SeededAccount; session: SeededSession }>> {
  const accounts = await seedAccounts(sql, prefix, count, passwordHash);
  const sessions = await seedSessions(sql, accounts.map((account) => account.id));
  return accounts.map((account, index) => ({ account, session: sessions[index]! }));
}

/**
 * `count` refresh requests, each with the refresh token of a session of its own account, as
 * clients are: a refresh locks its account row (the lock order), so refreshes of one account
 * queue behind each other.
 */
export async function seedRefreshRequests(sql: Sql, prefix: string, count: number, passwordHash: string): Promise<WrkRequest[]> {
  return (await seedSignedIn(sql, prefix, count, passwordHash)).map(({ session }) => ({
    method: 'POST',
    path: '/auth/token',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: session.refreshToken }),
  }));
}
