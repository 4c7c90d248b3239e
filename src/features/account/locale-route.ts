import { authenticate, invalidToken } from '../../core/auth.ts';
import { readValidBody } from '../../http/body.ts';
import type { Handler } from '../../http/router.ts';
import { canonicalLocale } from '../../config/locales.ts';
import { setAccountLocale } from './locale.ts';
import { localePattern } from '../../config/locales.ts';
import { field, type Schema } from '../../http/validate.ts';

/**
 * PUT /acc/me/locale: the locale of the account's mail, stored as canonically written (de-AT);
 * null: the service's default.
 */
export const setLocaleRoute: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  const { locale } = await readValidBody(ctx.req, localeSchema);
  const stored = await setAccountLocale(deps, account.id, locale === null ? null : canonicalLocale(locale));
  if (!stored) throw invalidToken();
  return { status: 204 };
};

/** Ours: the owner's choice of locale (PUT /acc/me/locale); null: MAIL_DEFAULT_LOCALE. */
export const localeSchema = { locale: field(localePattern, { nullable: true }) } satisfies Schema;
