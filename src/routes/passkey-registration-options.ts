import { authenticate, callerRefusal, clientOf } from '../http/auth.ts';
import { readValidBody } from '../http/body.ts';
import { HttpError, problems, quotaRefused } from '../http/errors.ts';
import { requireRelyingParty } from '../http/relying-party.ts';
import type { Handler } from '../http/router.ts';
import { startPasskeyRegistration } from '../use-cases/passkeys.ts';
import { passkeyOptionsSchema } from '../validation.ts';

/** POST /acc/me/passkeys/options: creation options for the browser, and a code mailed to the account. */
export const passkeyRegistrationOptionsRoute: Handler = async (ctx, deps) => {
  const rp = requireRelyingParty(deps);
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, passkeyOptionsSchema);
  const otp = (value.otp as string | null) ?? undefined;
  const result = await startPasskeyRegistration(deps, rp, caller, value.pwd, otp, clientOf(ctx));
  if (result.outcome === 'limit') throw new HttpError(problems.passkeyLimit);
  if (result.outcome === 'refused') throw quotaRefused(result.refusal);
  if (result.outcome !== 'started') throw callerRefusal(result);
  return { status: 200, body: { challenge_id: result.challengeId, options: result.options } };
};
