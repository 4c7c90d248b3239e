import { authenticate, callerRefusal, clientOf } from '../../core/auth.ts';
import { patterns } from '../../core/fields.ts';
import { readValidBody } from '../../http/body.ts';
import { quotaRefused } from '../../http/errors.ts';
import type { Handler } from '../../http/router.ts';
import { field } from '../../http/validate.ts';
import { exportAccount } from './export.ts';

export const exportSchema = { pwd: field(patterns.password), otp: field(patterns.otp, { required: false }) };

/** POST /acc/me/export `{pwd, otp?}`: 200 with everything kept about the account (docs/api.md, "Export"). */
export const exportAccountRoute: Handler = async (ctx, deps) => {
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, exportSchema);
  const otp = (value.otp as string | null) ?? undefined;
  const result = await exportAccount(deps, caller, { password: value.pwd, otp }, clientOf(ctx));
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  if (result.outcome !== 'exported') throw callerRefusal(result);
  return { status: 200, body: result.document };
};
