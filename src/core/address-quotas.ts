import type { KeyedHashes } from './keyed-hashes.ts';
import type { Sql, Transaction } from '../storage/db.ts';
import type { CodePurpose } from './one-time-codes.ts';

/** How long an address must wait before it may ask for another code of the same purpose. */
export const cooldownSeconds = 60;
/** Codes of one purpose an address may ask for in a day. Also bounds the mail we send to one mailbox. */
export const dailyCap = 10;
const dayMs = 24 * 3600 * 1000;

export type QuotaRefusal = { reason: 'cooldown' | 'daily-cap'; retryAfterSeconds: number };

/**
 * A code purpose, counted per address; 'account-email-change', an account's own e-mail change
 * requests, counted per account (accountQuotaKey); or 'reset-known', reset requests from a
 * network known to the address, counted per address and network (knownNetworkQuotaKey).
 */
export type QuotaPurpose =
  CodePurpose | 'account-email-change' | 'reset-known' | 'identity-notice' | 'sign-in-notice' | 'export';

/** The purposes counted per account, not per address: the account's own requests that mail it. */
const accountPurposes: QuotaPurpose[] = [
  'totp', 'passkey', 'deletion', 'account-email-change', 'identity', 'identity-notice', 'sign-in-notice', 'export',
];

/**
 * The key of an account's own quotas: the keyed hash of its public id. No address is one (it
 * has no @), and its purposes are counted per account only.
 */
export function accountQuotaKey(keys: KeyedHashes, publicId: string): Buffer {
  return keys.address(publicId);
}

/**
 * The key of an address's reset requests from one client network: the keyed hash of both. No
 * address is one (it holds a space).
 */
export function knownNetworkQuotaKey(keys: KeyedHashes, email: string, network: string): Buffer {
  return keys.address(`${email} ${network}`);
}

/**
 * Counts one request of `purpose` for the address (or account), or refuses it. Every address is
 * counted, whether it has an account, a pending registration or nothing, so that a cooldown or
 * a cap never tells them apart. One upsert decides: concurrent requests for one key queue on
 * its row, and only the first within the cooldown is counted.
 */
export async function reserveAddressRequest(
  tx: Transaction,
  purpose: QuotaPurpose,
  addressKey: Buffer,
  now: Date,
  cap = dailyCap,
): Promise<QuotaRefusal | null> {
  const dayAgo = new Date(now.getTime() - dayMs);
  const cooldownStart = new Date(now.getTime() - cooldownSeconds * 1000);
  const reserved = await tx`
    INSERT INTO address_quotas AS q (purpose, address_key, requested_at, last_at)
    VALUES (${purpose}, ${addressKey}, ARRAY[${now}::timestamptz], ${now})
    ON CONFLICT (purpose, address_key) DO UPDATE
    SET requested_at =
          ARRAY(SELECT t FROM unnest(q.requested_at) AS t WHERE t > ${dayAgo} ORDER BY t) || ${now}::timestamptz,
        last_at = ${now}
    WHERE q.last_at <= ${cooldownStart}
      AND (SELECT count(*) FROM unnest(q.requested_at) AS t WHERE t > ${dayAgo}) < ${cap}
    RETURNING 1`;
  if (reserved.count === 1) return null;
  const [row] = await tx`
    SELECT last_at, ARRAY(SELECT t FROM unnest(requested_at) AS t WHERE t > ${dayAgo} ORDER BY t) AS recent
    FROM address_quotas WHERE purpose = ${purpose} AND address_key = ${addressKey}`;
  const recent = row!.recent as Date[];
  const secondsUntil = (at: number) => Math.max(1, Math.ceil((at - now.getTime()) / 1000));
  // Capped: a concurrent request that won the row may have read the clock a moment later.
  const lastAt = (row!.last_at as Date).getTime();
  const cooldownWait = Math.min(cooldownSeconds, secondsUntil(lastAt + cooldownSeconds * 1000));
  if (recent.length < cap) return { reason: 'cooldown', retryAfterSeconds: cooldownWait };
  // The cap frees when the oldest of the last `cap` requests turns a day old.
  const capFreesAt = recent[recent.length - cap]!.getTime() + dayMs;
  return { reason: 'daily-cap', retryAfterSeconds: Math.max(cooldownWait, secondsUntil(capFreesAt)) };
}

/** Forgets the account's own request quotas. */
export async function clearAccountQuotas(sql: Sql, keys: KeyedHashes, publicId: string): Promise<void> {
  const key = accountQuotaKey(keys, publicId);
  await sql`DELETE FROM address_quotas WHERE purpose IN ${sql(accountPurposes)} AND address_key = ${key}`;
}

/** Forgets addresses whose last request is a day old: they are under no limit any more. */
export async function deleteStaleQuotas(sql: Sql, now: Date): Promise<number> {
  const rows = await sql`DELETE FROM address_quotas WHERE last_at < ${new Date(now.getTime() - dayMs)}`;
  return rows.count;
}
