import { authenticate, callerRefusal, clientOf } from '../http/auth.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import { requireRelyingParty } from '../http/relying-party.ts';
import type { Handler } from '../http/router.ts';
import { addPasskey } from '../use-cases/passkeys.ts';
import { isPlainObject, passkeyAdditionSchema, validateFields } from '../validation.ts';
import { passkeyBody } from './list-passkeys.ts';

const refusals = {
  'unknown-challenge': problems.unknownChallenge,
  'wrong-code': problems.wrongEmailCode,
  limit: problems.passkeyLimit,
  registered: problems.passkeyRegistered,
} as const;

/**
 * POST /acc/me/passkeys: the browser's RegistrationResponseJSON (`credential`, an object), the
 * challenge it answers and the e-mailed code; 201 with the passkey.
 */
export const addPasskeyRoute: Handler = async (ctx, deps) => {
  const rp = requireRelyingParty(deps);
  const caller = await authenticate(ctx, deps);
  const { credential, ...fields } = await readJsonObject(ctx.req);
  const { value, invalid } = validateFields(fields, passkeyAdditionSchema);
  if (!isPlainObject(credential)) {
    invalid.push({ name: 'credential', reason: 'must be a RegistrationResponseJSON object' });
  }
  if (invalid.length > 0) throw invalidFields(invalid);
  const name = value.name as string | null;
  const request = { challengeId: value.challenge_id, credential, emailCode: value.email_code, name };
  const result = await addPasskey(deps, rp, caller, request, clientOf(ctx));
  if (result.outcome === 'session-ended') throw callerRefusal({ outcome: 'session-ended' });
  if (result.outcome === 'invalid') {
    throw new HttpError(problems.invalidPasskey, { detail: `Refused at the check of: ${result.reason}.` });
  }
  if (result.outcome !== 'added') throw new HttpError(refusals[result.outcome]);
  return { status: 201, body: passkeyBody(result.passkey) };
};
