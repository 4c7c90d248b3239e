import { findCodeExpiry, hashCode, type CodePurpose } from '../accounts/one-time-codes.ts';
import { HttpError, problems } from './errors.ts';
import type { Deps } from './router.ts';

/**
 * The hash of a code that exists for `purpose` and has not expired, else 404 or 410. Unknown
 * and expired codes, the usual result of guessing, are answered from one read with no
 * transaction. Looked up by hash: only hashes are stored, and an index lookup on a SHA-256
 * value reveals nothing about which codes exist.
 */
export async function checkCode(deps: Deps, purpose: CodePurpose, code: string): Promise<Buffer> {
  const codeHash = hashCode(code);
  const expiresAt = await findCodeExpiry(deps.sql, purpose, codeHash);
  if (expiresAt === null) throw new HttpError(problems.unknownCode);
  if (expiresAt <= deps.clock()) throw new HttpError(problems.codeExpired, { detail: 'Request a new code.' });
  return codeHash;
}
