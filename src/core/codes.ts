import type { CodePurpose } from './one-time-codes.ts';
import { findLiveCode, type LiveCode } from './reads.ts';
import { HttpError, problems } from '../http/errors.ts';
import type { Deps } from '../http/router.ts';

/** A code that exists for `purpose` and has not expired, with its hash (core/reads.ts), else 404 or 410. */
export async function checkCode(deps: Deps, purpose: CodePurpose, code: string): Promise<LiveCode> {
  const found = await findLiveCode(deps, purpose, code);
  if (found.outcome === 'unknown') throw new HttpError(problems.unknownCode);
  if (found.outcome === 'expired') throw new HttpError(problems.codeExpired, { detail: 'Request a new code.' });
  return found.code;
}
