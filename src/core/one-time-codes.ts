import { createHash, randomInt } from 'node:crypto';
import type { Sql, Transaction } from '../storage/db.ts';
import { HttpError, problems } from '../http/errors.ts';
import type { UseCaseDeps } from './transaction.ts';

/** What a code is for. A code works only at the endpoint of its own purpose. */
export type CodePurpose =
  | 'registration' | 'reset' | 'email-change' | 'email-change-current' | 'passkey' | 'totp' | 'deletion' | 'identity'
  | 'sign-in';

/** What an e-mail change code carries besides its account: the address it confirms, and the session that asked. */
export type EmailChange = { newEmail: string; sessionId: string };

const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** `XXXX-XXXX-XXXX-XXXX` from 16 uniformly drawn letters: 16 × log2(26) ≈ 75 bits. */
export const generateCode = (): string => drawGroupedCode(letters);

/**
 * 16 symbols drawn uniformly from `alphabet` (randomInt, a CSPRNG without modulo bias), in four
 * groups of four joined by hyphens: e-mailed codes and recovery codes alike.
 */
export function drawGroupedCode(alphabet: string): string {
  const drawn = Array.from({ length: 16 }, () => alphabet[randomInt(alphabet.length)]).join('');
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
export async function storeCode(
  tx: Transaction, purpose: CodePurpose, accountId: string, codeHash: Buffer, expiresAt: Date, now: Date,
  change: EmailChange | null = null,
): Promise<void> {
  await deleteCodes(tx, accountId, purpose);
  await tx`
    INSERT INTO one_time_codes (code_hash, purpose, account_id, expires_at, created_at, new_email, session_id)
    VALUES (
      ${codeHash}, ${purpose}, ${accountId}, ${expiresAt}, ${now}, ${change?.newEmail ?? null},
      ${change?.sessionId ?? null})`;
}

/** A code as its lookup finds it: when it expires, and the account (or pending registration) it belongs to. */
export type FoundCode = {
  expiresAt: Date; accountId: string; publicId: string; name: string; email: string; locale: string | null;
};

export type LiveCode = FoundCode & { codeHash: Buffer };

/**
 * A code that exists for `purpose` and has not expired, with its hash; else 404 or 410. Looked up
 * by hash in one read without a lock: only hashes are stored, and the use case that acts on it
 * uses it up (consumeCodes), which decides.
 */
export async function checkCode(
  deps: Pick<UseCaseDeps, 'sql' | 'clock'>, purpose: CodePurpose, code: string,
): Promise<LiveCode> {
  const codeHash = hashCode(code);
  const found = await findCode(deps.sql, purpose, codeHash);
  if (found === null) throw new HttpError(problems.unknownCode);
  if (found.expiresAt <= deps.clock()) throw new HttpError(problems.codeExpired, { detail: 'Request a new code.' });
  return { ...found, codeHash };
}

/** The code of this purpose with this hash, or null. Reads without a lock. */
export async function findCode(sql: Sql, purpose: CodePurpose, codeHash: Buffer): Promise<FoundCode | null> {
  const [row] = await sql<FoundCode[]>`
    SELECT c.expires_at AS "expiresAt", c.account_id AS "accountId", a.public_id AS "publicId",
      a.name, a.email, a.locale
    FROM one_time_codes c JOIN accounts a ON a.id = c.account_id
    WHERE c.code_hash = ${codeHash} AND c.purpose = ${purpose}`;
  return row ?? null;
}

/**
 * Uses up a live code of the account together with every other code of the purpose; false,
 * deleting whatever else it found, when this code was not among them alive (a concurrent
 * request used it first, or it expired): the caller then rolls back. The delete is the
 * single-use guarantee: of any number of requests with one code, exactly one deletes its row.
 */
export async function consumeCodes(
  tx: Transaction, accountId: string, purpose: CodePurpose, codeHash: Buffer, now: Date,
): Promise<boolean> {
  const [row] = await tx`
    WITH used AS (
      DELETE FROM one_time_codes WHERE account_id = ${accountId} AND purpose = ${purpose}
      RETURNING code_hash, expires_at)
    SELECT EXISTS (SELECT 1 FROM used WHERE code_hash = ${codeHash} AND expires_at > ${now}) AS consumed`;
  return row!.consumed as boolean;
}

/** The change a live e-mail change code of the account carries, or null. Reads without a lock: consumeCodes decides. */
export async function findEmailChange(
  tx: Transaction, accountId: string, codeHash: Buffer, now: Date,
): Promise<EmailChange | null> {
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
