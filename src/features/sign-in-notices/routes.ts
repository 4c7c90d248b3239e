import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { patterns } from '../../core/fields.ts';
import { readValidBody } from '../../http/body.ts';
import type { Handler } from '../../http/router.ts';
import { explained, field } from '../../http/validate.ts';
import { setSignInNotices } from './settings.ts';

export const noticesSchema = { sign_in: field(explained(/^(on|off)$/, 'on or off')), pwd: field(patterns.password) };

/** GET /acc/me/notices: whether the account's owner is mailed of sign-ins from new networks and clients. */
export const getNoticesRoute: Handler = async (ctx, deps) => {
  const { account } = await authenticate(ctx, deps);
  const [row] = await deps.sql`SELECT sign_in_notices FROM accounts WHERE id = ${account.id}`;
  return { status: 200, body: { sign_in: row?.sign_in_notices === false ? 'off' : 'on' } };
};

/** PUT /acc/me/notices `{sign_in: "on" | "off", pwd}`: 200 with the setting (features/sign-in-notices/settings.ts). */
export const setNoticesRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, noticesSchema);
  const result = await setSignInNotices(deps, caller, value.sign_in === 'on', value.pwd, clientOf(ctx));
  if (result.outcome !== 'set') throw callerRefusal(result);
  return { status: 200, body: { sign_in: value.sign_in } };
};
