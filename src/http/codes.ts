import { findCode, hashCode, type CodePurpose, type FoundCode } from '../accounts/one-time-codes.ts';
import { HttpError, problems } from './errors.ts';
import type { Deps } from './router.ts';

/**
 * A code that exists for `purpose` and has not expired, with its hash, else 404 or 410. Unknown
 * and expired codes, the usual result of guessing, are answered from one read with no
 * transaction. Looked up by hash: only hashes are stored, and an index lookup on a SHA-256
 * value reveals nothing about which codes exist.
 */
export async function checkCode(deps: Deps, purpose: CodePurpose, code: string): Promise<FoundCode & { codeHash: Buffer }> {
  const codeHash = hashCode(code);
  const found = await findCode(deps.sql, purpose, codeHash);
  if (found === null) throw new HttpError(problems.unknownCode);
  if (found.expiresAt <= deps.clock()) throw new HttpError(problems.codeExpired, { detail: 'Request a new code.' });
  return { ...found, codeHash };
}
