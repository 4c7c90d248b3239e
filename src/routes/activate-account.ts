import { hashRegistrationCode } from '../codes.ts';
import { readJsonObject } from '../http/body.ts';
import { HttpError, invalidFields, problems } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';
import { accountActiveMail } from '../mail/messages.ts';
import { enqueueMail } from '../mail/outbox.ts';
import { activateRegistration, findCodeExpiry, lockRegistrationByCode } from '../registrations.ts';
import { activationSchema, validateFields } from '../validation.ts';

/** POST /acc/reg: turn the pending registration that holds this code into an active account. */
export const activateAccount: Handler = async (ctx, deps) => {
  const { value, invalid } = validateFields(await readJsonObject(ctx.req), activationSchema);
  if (invalid.length > 0) throw invalidFields(invalid);

  // Looked up by hash: only hashes are stored, and an index lookup on a SHA-256 value
  // reveals nothing about which codes exist.
  const codeHash = hashRegistrationCode(value.code);
  const now = deps.clock();
  // Unknown and expired codes, the usual result of guessing, are answered from one read with
  // no transaction; only a live code takes the lock and the writes.
  const expiresAt = await findCodeExpiry(deps.sql, codeHash);
  if (expiresAt === null) throw new HttpError(problems.unknownCode);
  if (expiresAt <= now) throw codeExpired();
  const outcome = await deps.sql.begin(async (tx) => {
    const pending = await lockRegistrationByCode(tx, codeHash);
    if (pending === null) return 'unknown';
    if (pending.expiresAt <= now) return 'expired';
    await activateRegistration(tx, pending.id, now);
    await enqueueMail(tx, accountActiveMail(pending.email, pending.name), deps.sealer, now);
    return 'activated';
  });
  // Checked again under the lock: a concurrent request may have used or replaced the code.
  if (outcome === 'unknown') throw new HttpError(problems.unknownCode);
  if (outcome === 'expired') throw codeExpired();
  deps.outbox.wake();
  return { status: 204 };
};

function codeExpired(): HttpError {
  return new HttpError(problems.codeExpired, { detail: 'Request a new code with POST /acc/reg/code.' });
}
