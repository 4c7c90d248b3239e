import { readValidBody } from '../../http/body.ts';
import { HttpError, invalidFields, problems, quotaRefused } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { canonicalLocale, negotiateLocale } from '../../config/locales.ts';
import { requestRegistrationCode } from './request-code.ts';
import { registrationSchema } from '../../core/fields.ts';

/**
 * POST /acc/reg/code: store a pending registration and e-mail its code
 * (features/registration/request-code.ts). Whatever the address holds, the caller gets the
 * same answer: 400, then 409 for a taken name, then 429 from the address's quota, then 204.
 * The locale of its mail: `locale` if given, else Accept-Language's if the templates have it.
 */
export const requestRegistrationCodeRoute: Handler = async (ctx, deps) => {
  const fields = await readValidBody(ctx.req, registrationSchema);
  const weak = await deps.screenPassword(fields.pwd);
  if (weak !== null) throw invalidFields([{ name: 'pwd', reason: weak }]);
  const locale = fields.locale === null
    ? negotiateLocale(ctx.req.headers['accept-language'], deps.mailer.locales)
    : canonicalLocale(fields.locale);
  const result = await requestRegistrationCode(deps, { ...fields, locale });
  if (result.outcome === 'name-taken') throw new HttpError(problems.nameTaken);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  return { status: 204 };
};
