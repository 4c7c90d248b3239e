import { readValidBody } from '../http/body.ts';
import { HttpError, problems, quotaRefused } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { requestRegistrationCode } from '../use-cases/request-registration-code.ts';
import { registrationSchema } from '../validation.ts';

/**
 * POST /acc/reg/code: store a pending registration and e-mail its code
 * (use-cases/request-registration-code.ts). Whatever the address holds, the caller gets the
 * same answer: 400, then 409 for a taken name, then 429 from the address's quota, then 204.
 */
export const requestRegistrationCodeRoute: Handler = async (ctx, deps) => {
  const fields = await readValidBody(ctx.req, registrationSchema);
  const result = await requestRegistrationCode(deps, fields);
  if (result.outcome === 'name-taken') throw new HttpError(problems.nameTaken);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  return { status: 204 };
};
