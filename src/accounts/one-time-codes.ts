import { createHash, randomInt } from 'node:crypto';
import type { Sql, Transaction } from '../storage/db.ts';

/** What a code is for. A code works only at the endpoint of its own purpose. */
export type CodePurpose = 'registration' | 'reset' | 'email-change';

/** What an e-mail change code carries besides its account: the address it confirms, and the session that asked. */
export type EmailChange = { newEmail: string; sessionId: string };

const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** `XXXX-XXXX-XXXX-XXXX` from 16 uniformly drawn letters: 16 × log2(26) ≈ 75 bits. */
export function generateCode(): string {
  const drawn = Array.from({ length: 16 }, () => letters[randomInt(letters.length)]).join('');
  return drawn.match(/.{4}/g)!.join('-');
}

/**
 * What is stored and looked up instead of the code. A fast hash is enough: the code has
 * 75 random bits, so no dictionary or brute force reaches it, and lookup needs determinism.
 * Letter case is folded first because clients may send the code in any case.
 */
export function hashCode(code: string): Buffer {
  return createHash('sha256').update(code.toUpperCase()).digest();
}

/**
 * Stores a new code for the account; its older codes of the same purpose stop working. An
 * e-mail change code (and only one) carries its change (sql/012).
 */
export async function storeCode(tx: Transaction, purpose: CodePurpose, accountId: string, codeHash: Buffer, expiresAt: Date, now: Date, change: EmailChange | null = null): Promise<void> {
  await deleteCodes(tx, accountId, purpose);
  await tx`
    INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at, new_email, session_id)
    VALUES (${codeHash}, ${purpose}, ${accountId}, ${expiresAt}, ${now}, ${change?.newEmail ?? null}, ${change?.sessionId ?? null})`;
}

/** The account and expiry of a code, or null if no code of this purpose has this hash. Reads without a lock. */
export async function findCode(sql: Sql, purpose: CodePurpose, codeHash: Buffer): Promise<{ accountId: string; expiresAt: Date } | null> {
  const [row] = await sql`SELECT account_id, expires_at FROM one_time_codes WHERE code_hash = ${codeHash} AND purpose = ${purpose}`;
  return row === undefined ? null : { accountId: row.account_id as string, expiresAt: row.expires_at as Date };
}

/** When the code expires, or null if no code of this purpose has this hash. Reads without a lock. */
export async function findCodeExpiry(sql: Sql, purpose: CodePurpose, codeHash: Buffer): Promise<Date | null> {
  const [row] = await sql`SELECT expires_at FROM one_time_codes WHERE code_hash = ${codeHash} AND purpose = ${purpose}`;
  return (row?.expires_at as Date | undefined) ?? null;
}

/**
 * Uses up a live code and returns its account's id; null when it is unknown, expired, or was
 * used first by a concurrent request. The delete is the single-use guarantee: of any number
 * of requests with one code, exactly one deletes the row.
 */
export async function consumeCode(tx: Transaction, purpose: CodePurpose, codeHash: Buffer, now: Date): Promise<string | null> {
  const [row] = await tx`
    DELETE FROM one_time_codes WHERE code_hash = ${codeHash} AND purpose = ${purpose} AND expires_at > ${now}
    RETURNING account_id`;
  return (row?.account_id as string | undefined) ?? null;
}

/** The change a live e-mail change code of the account carries, or null. Reads without a lock: consumeCode decides. */
export async function findEmailChange(tx: Transaction, accountId: string, codeHash: Buffer, now: Date): Promise<EmailChange | null> {
  const [row] = await tx`
    SELECT new_email, session_id FROM one_time_codes
    WHERE code_hash = ${codeHash} AND purpose = 'email-change' AND account_id = ${accountId} AND expires_at > ${now}`;
  return row === undefined ? null : { newEmail: row.new_email as string, sessionId: row.session_id as string };
}

export async function deleteCodes(tx: Transaction, accountId: string, purpose: CodePurpose): Promise<void> {
  await tx`DELETE FROM one_time_codes WHERE account_id = ${accountId} AND purpose = ${purpose}`;
}

/** Deletes codes that expired before `before`; returns how many. */
export async function deleteExpiredCodes(sql: Sql, before: Date): Promise<number> {
  const rows = await sql`DELETE FROM one_time_codes WHERE expires_at < ${before}`;
  return rows.count;
}
