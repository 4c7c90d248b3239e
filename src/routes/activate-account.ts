import { hashRegistrationCode } from '../codes.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { accountActiveMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { activateRegistration, lockRegistrationByCode } from '../registrations.ts';
import { activationSchema, validateFields } from '../validation.ts';

/** POST /acc/reg: turn the pending registration that holds this code into an active account. */
export const activateAccount: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), activationSchema);
  if (invalid.length > 0) throw invalidFields(invalid);

  // Looked up by hash: only hashes are stored, and an index lookup on a SHA-256 value
  // reveals nothing about which codes exist.
  const codeHash = hashRegistrationCode(value.code);
  const now = deps.clock();
  const outcome = await deps.sql.begin(async (tx) => {
    const pending = await lockRegistrationByCode(tx, codeHash);
    if (pending === null) return 'unknown';
    if (pending.expiresAt <= now) return 'expired';
    await activateRegistration(tx, pending.id, now);
    await enqueueMail(tx, accountActiveMail(pending.email, pending.name), deps.sealer, now);
    return 'activated';
  });
  if (outcome === 'unknown') throw new HttpError(problems.unknownCode);
  if (outcome === 'expired') throw new HttpError(problems.codeExpired, { detail: 'Request a new code with POST /acc/reg/code.' });
  deps.outbox.wake();
  return { status: 204 };
};
