import type { SecondFactorOutcome } from '../use-cases/second-factor.ts';
import { HttpError, problems } from './errors.ts';

/**
 * The problem for a password check that failed at its second factor (a request with a bearer
 * token, answered as RFC 9457), or null when the password itself was wrong.
 */
export function secondFactorRefusal(outcome: SecondFactorOutcome): HttpError | null {
  if (outcome === 'missing') return new HttpError(problems.otpRequired);
  if (outcome === 'wrong') return new HttpError(problems.wrongOtp);
  return null;
}
