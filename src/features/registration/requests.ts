import type { Sql, Transaction } from '../../storage/db.ts';
import { registrationAttemptMail, registrationCodeMail } from '../../mail/messages.ts';
import { enqueueMail } from '../../mail/outbox.ts';
import type { Mailer } from '../../mail/templates.ts';
import { generateCode, hashCode, storeCode } from '../../core/one-time-codes.ts';
import { attemptNoticeIntervalMs } from '../../core/accounts.ts';
import {
  insertRegistration, lockAddressHolder, recordAttemptNotice, releaseExpiredHolders, type NewRegistration,
} from './store.ts';

/**
 * A registration request, once its name is held and its quota counted, is only recorded: the
 * same one row for every address, so that the rows it writes (and their time) never tell whether
 * the address has an account, a pending registration or nothing. The worker resolves it moments
 * later (request-resolver.ts) with resolveNextRegistrationRequest.
 */
export async function recordRegistrationRequest(
  tx: Transaction, registration: NewRegistration, now: Date,
): Promise<void> {
  const { name, email, phone, passwordHash, expiresAt, locale } = registration;
  await tx`
    INSERT INTO registration_requests (name, address, phone, password_hash, expires_at, requested_at, locale)
    VALUES (${name}, ${email}, ${phone}, ${passwordHash}, ${expiresAt}, ${now}, ${locale})`;
}

/**
 * Resolves the oldest recorded request, in one transaction; false when none waits. What the
 * address holds decides what happens, as only its mailbox learns:
 * - nothing: a pending registration is stored, and its code mailed;
 * - a pending registration: it is kept as it is (its name, password, phone and expiry stay
 *   those of the first request, so that nobody who knows the address can change what the
 *   owner's code activates); a new code for it is mailed, and older ones stop working;
 * - an account: nothing is stored, and the owner is told at the stored address, at most
 *   once an hour.
 * Mail to an account or a pending registration is in its locale; to a new one, in the request's.
 */
export async function resolveNextRegistrationRequest(sql: Sql, mailer: Mailer): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [request] = await tx`
      DELETE FROM registration_requests
      WHERE id = (SELECT id FROM registration_requests ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING name, address, phone, password_hash, expires_at, requested_at, locale`;
    if (request === undefined) return false;
    const now = request.requested_at as Date;
    const registration: NewRegistration = {
      name: request.name, email: request.address, phone: request.phone, passwordHash: request.password_hash,
      expiresAt: request.expires_at, locale: request.locale,
    };
    const { name, email, expiresAt } = registration;
    const code = generateCode();
    // Expired registrations that hold the name or the address give way at once, not at the next sweep.
    await releaseExpiredHolders(tx, name, email, now);
    const holder = await lockAddressHolder(tx, email);
    if (holder === null) {
      // Null when a concurrent resolution took the name or the address first: that one stands.
      const id = await insertRegistration(tx, registration);
      if (id === null) return true;
      await storeCode(tx, 'registration', id, hashCode(code), expiresAt, now);
      await enqueueMail(tx, registrationCodeMail(registration, code, expiresAt, now), mailer, now);
    } else if (!holder.active) {
      await storeCode(tx, 'registration', holder.id, hashCode(code), holder.expiresAt, now);
      await enqueueMail(tx, registrationCodeMail(holder, code, holder.expiresAt, now, true), mailer, now);
    } else if (now.getTime() - (holder.attemptNotifiedAt?.getTime() ?? -Infinity) >= attemptNoticeIntervalMs) {
      await recordAttemptNotice(tx, holder.id, now);
      await enqueueMail(tx, registrationAttemptMail(holder), mailer, now);
    }
    return true;
  });
}

/** Deletes requests that no worker resolved before the registration would have expired; returns how many. */
export async function deleteStaleRegistrationRequests(sql: Sql, now: Date): Promise<number> {
  const rows = await sql`DELETE FROM registration_requests WHERE expires_at <= ${now}`;
  return rows.count;
}
