import { authenticate } from '../../core/auth.ts';
import type { Handler } from '../../http/router.ts';
import { isoUtc } from '../../support/format.ts';
import { hasActiveFactor } from '../../core/factor.ts';

/**
 * GET /acc/me: the signed-in account, without anything secret. `id` is the public id, never the
 * row id; `totp_enabled` tells whether a second factor is active; `locale` is that of its mail.
 */
export const getAccount: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  return {
    status: 200,
    body: {
      id: account.publicId, name: account.name, email: account.email, phone: account.phone, locale: account.locale,
      created_at: isoUtc(account.activatedAt), totp_enabled: await hasActiveFactor(deps.sql, account),
    },
  };
};
