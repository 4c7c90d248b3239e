import type { Sql, Transaction } from '../storage/db.ts';

/** An account's TOTP factor: pending until its first code confirms it, then active. */
export type SecondFactor = { sealedSecret: Buffer; active: boolean; lastUsedStep: number | null };

export async function findSecondFactor(sql: Sql | Transaction, accountId: string): Promise<SecondFactor | null> {
  const [row] = await sql<SecondFactor[]>`
    SELECT sealed_secret AS "sealedSecret", activated_at IS NOT NULL AS active, last_used_step::float8 AS "lastUsedStep"
    FROM second_factors WHERE account_id = ${accountId}`;
  return row ?? null;
}

/** Whether the account has this unused recovery code; useRecoveryCode decides, in the transaction that acts on it. */
export async function hasRecoveryCode(sql: Sql, accountId: string, codeHash: Buffer): Promise<boolean> {
  const rows = await sql`SELECT 1 FROM recovery_codes WHERE account_id = ${accountId} AND code_hash = ${codeHash}`;
  return rows.count === 1;
}

/**
 * Replaces a sealed secret with the same secret sealed under the current key, unless it changed
 * meanwhile (a new enrollment, a removal): the re-seal never brings back a secret.
 */
export async function resealFactor(
  sql: Sql | Transaction, accountId: string, old: Buffer, resealed: Buffer,
): Promise<boolean> {
  const rows = await sql`
    UPDATE second_factors SET sealed_secret = ${resealed} WHERE account_id = ${accountId} AND sealed_secret = ${old}`;
  return rows.count === 1;
}

/**
 * Records `step` as used if it is later than the last used step of the active factor; false for
 * a replay or an older step. The row lock makes it atomic: of two requests with one code, the
 * second re-reads the row after the first commits and finds the step used.
 */
export async function useTimeStep(sql: Sql | Transaction, accountId: string, step: number): Promise<boolean> {
  const rows = await sql`
    UPDATE second_factors SET last_used_step = ${step}
    WHERE account_id = ${accountId} AND activated_at IS NOT NULL
      AND (last_used_step IS NULL OR last_used_step < ${step})`;
  return rows.count === 1;
}

/**
 * Uses up a recovery code and answers how many are left, or null if the account has no such
 * unused code. The delete is the single-use guarantee: of two requests, exactly one deletes it.
 * The lookup is by hash in the database: the hash of an 80-bit random code gives a timing
 * attack nothing to steer, so no constant-time comparison is needed here.
 */
export async function useRecoveryCode(tx: Transaction, accountId: string, codeHash: Buffer): Promise<number | null> {
  const used = await tx`DELETE FROM recovery_codes WHERE account_id = ${accountId} AND code_hash = ${codeHash}`;
  if (used.count === 0) return null;
  const [row] = await tx`SELECT count(*)::int AS left FROM recovery_codes WHERE account_id = ${accountId}`;
  return row!.left as number;
}

/** Removes the active factor and its recovery codes; false when none was active. */
export async function removeFactor(tx: Transaction, accountId: string): Promise<boolean> {
  const rows = await tx`DELETE FROM second_factors WHERE account_id = ${accountId} AND activated_at IS NOT NULL`;
  await tx`DELETE FROM recovery_codes WHERE account_id = ${accountId}`;
  return rows.count === 1;
}
