import { authenticate, callerRefusal, clientOf, takeAccountAllowance } from '../../core/auth.ts';
import { readJsonObject, readValidBody } from '../../http/body.ts';
import { accountRateLimited, HttpError, invalidFields, problems, quotaRefused } from '../../http/errors.ts';
import { requireRelyingParty } from './relying-party.ts';
import type { Handler } from '../../http/router.ts';
import { isoUtc } from '../../support/format.ts';
import { startPasskeySignIn } from './sign-in.ts';
import {
  addPasskey, listAccountPasskeys, removePasskey, renameAccountPasskey, startPasskeyRegistration, type Passkey,
} from './manage.ts';
import {
  passkeyAdditionSchema, passkeyOptionsSchema, passkeyRemovalSchema, passkeyRenameSchema,
} from './fields.ts';
import { isPlainObject, isUuid, validateFields } from '../../http/validate.ts';

/**
 * The passkey routes. Each answers 404 naming the settings while no relying party is
 * configured (requireRelyingParty); another account's passkey id is answered like an unknown one.
 */

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

const additionRefusals = {
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
  if (result.outcome !== 'added') throw new HttpError(additionRefusals[result.outcome]);
  return { status: 201, body: passkeyBody(result.passkey) };
};

/** GET /acc/me/passkeys: the account's passkeys, oldest first. */
export const listPasskeysRoute: Handler = async (ctx, deps) => {
  requireRelyingParty(deps);
  const { account } = await authenticate(ctx, deps);
  return { status: 200, body: { passkeys: (await listAccountPasskeys(deps, account.id)).map(passkeyBody) } };
};

/** PATCH /acc/me/passkeys/{id}: a new name. */
export const renamePasskeyRoute: Handler = async (ctx, deps) => {
  requireRelyingParty(deps);
  const caller = await authenticate(ctx, deps);
  // Each rename writes an event: the account's renames, from all its sessions, count in one allowance.
  const wait = takeAccountAllowance(deps, `passkey-renames ${caller.account.id}`);
  if (wait > 0) throw accountRateLimited(wait);
  const value = await readValidBody(ctx.req, passkeyRenameSchema);
  const id = ctx.params.id ?? '';
  const result = isUuid(id)
    ? await renameAccountPasskey(deps, caller, id, value.name, clientOf(ctx))
    : ({ outcome: 'unknown' } as const);
  if (result.outcome === 'unknown') throw new HttpError(problems.unknownPasskey);
  if (result.outcome === 'session-ended') throw callerRefusal(result);
  return { status: 200, body: passkeyBody(result.passkey) };
};

/** DELETE /acc/me/passkeys/{id} `{pwd}`: 204. */
export const removePasskeyRoute: Handler = async (ctx, deps) => {
  requireRelyingParty(deps);
  const caller = await authenticate(ctx, deps);
  const value = await readValidBody(ctx.req, passkeyRemovalSchema);
  const id = ctx.params.id ?? '';
  const result = isUuid(id)
    ? await removePasskey(deps, caller, id, value.pwd, clientOf(ctx))
    : ({ outcome: 'unknown' } as const);
  if (result.outcome === 'unknown') throw new HttpError(problems.unknownPasskey);
  if (result.outcome !== 'removed') throw callerRefusal(result);
  return { status: 204 };
};

/** POST /auth/passkey/options: request options for a usernameless sign-in; the same shape for every caller. */
export const passkeySignInOptionsRoute: Handler = async (_ctx, deps) => {
  const { challengeId, options } = startPasskeySignIn(deps, requireRelyingParty(deps));
  return { status: 200, body: { challenge_id: challengeId, options } };
};

function passkeyBody(passkey: Passkey): Record<string, unknown> {
  const { id, name, createdAt, lastUsedAt, backedUp, transports } = passkey;
  const last_used_at = lastUsedAt === null ? null : isoUtc(lastUsedAt);
  return { id, name, created_at: isoUtc(createdAt), last_used_at, backed_up: backedUp, transports };
}
