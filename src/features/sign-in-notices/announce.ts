import { isIP } from 'node:net';
import { accountQuotaKey, reserveAddressRequest } from '../../core/address-quotas.ts';
import { inTransaction, type Client, type UseCaseDeps } from '../../core/transaction.ts';
import { clientNetwork } from '../../http/rate-limit.ts';
import { noticeMail } from '../../mail/messages.ts';
import type { Sql } from '../../storage/db.ts';
import { enqueueMail } from '../../mail/outbox.ts';

/** How a session started, as the notice names it. */
export type SignInWay = 'password' | 'passkey' | 'provider' | 'code';
const wayText: Record<SignInWay, string> = {
  password: 'with the password', passkey: 'with a passkey', provider: 'through a sign-in provider',
  code: 'with a code mailed to this address',
};

/** A network and client pair not seen in this time is new. */
const rememberedDays = 30;
/**
 * The pairs an account keeps at most, the least recently seen forgotten first: a password holder
 * who signs in with ever new user agents and networks cannot grow the table without bound.
 */
const rememberedPairs = 50;
/** Notices an account gets a day at most (and one a minute), so that sign-ins cannot flood its mailbox. */
export const noticesPerDay = 3;

/**
 * Announces a sign-in to the owner when its network (an IPv4 /24, an IPv6 /64) and client family
 * (clientFamily) are a pair the account has not signed in from in 30 days: a mail saying when,
 * from where, with what, and what to do if it was not them. Not for the account's first sign-in
 * ever, from the network it was registered from, nor while the owner turned notices off; at most
 * one a minute and `noticesPerDay` a day. A sign-in by mailed code is announced always, new pair
 * or not, past the cap too. Runs after the session started, in its own transaction; a failure is
 * logged and never undoes the sign-in.
 */
export async function announceSignIn(deps: UseCaseDeps, accountId: string, client: Client, way: SignInWay) {
  const now = deps.clock();
  const network = noticeNetwork(client.address);
  const networkHash = deps.keys.client(network);
  const family = clientFamily(client.userAgent);
  const monthAgo = new Date(now.getTime() - rememberedDays * 24 * 3600 * 1000);
  const failed = (error: unknown) => {
    deps.log.error('a sign-in could not be remembered for its notice', { error: String(error) });
    return undefined;
  };
  // The common case, a known pair, is one update by primary key and nothing more.
  const touched = await deps.sql`
    UPDATE sign_in_clients SET last_seen_at = ${now}
    WHERE account_id = ${accountId} AND network_hash = ${networkHash} AND client = ${family}
      AND last_seen_at > ${monthAgo}`.catch(failed);
  if (touched === undefined || (touched.count === 1 && way !== 'code')) return;
  // A new pair: remembered, and what the account had before read from the statement's snapshot,
  // which the upsert does not change; past `rememberedPairs`, the least recently seen go.
  const seen = await deps.sql`
    WITH before AS (
      SELECT a.public_id AS "publicId", a.name, a.email, a.locale, a.sign_in_notices AS wanted,
        EXISTS (SELECT 1 FROM sign_in_clients c WHERE c.account_id = a.id AND c.network_hash = ${networkHash}
          AND c.client = ${family} AND c.last_seen_at > ${monthAgo}) AS known,
        (SELECT count(*) FROM (SELECT FROM security_events e WHERE e.account_id = a.id AND e.type = 'signed-in'
          LIMIT 2) AS sign_ins) < 2 AS first,
        (SELECT e.client_address FROM security_events e WHERE e.account_id = a.id AND e.type = 'activated'
          ORDER BY e.occurred_at, e.id LIMIT 1) AS "registeredFrom"
      FROM accounts a WHERE a.id = ${accountId} AND a.activated_at IS NOT NULL
    ), remembered AS (
      INSERT INTO sign_in_clients (account_id, network_hash, client, last_seen_at)
      SELECT ${accountId}, ${networkHash}, ${family}, ${now} FROM before
      ON CONFLICT (account_id, network_hash, client) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at
    ), forgotten AS (
      DELETE FROM sign_in_clients WHERE account_id = ${accountId} AND (network_hash, client) IN (
        SELECT network_hash, client FROM sign_in_clients WHERE account_id = ${accountId}
        ORDER BY last_seen_at DESC OFFSET ${rememberedPairs - 1})
    )
    SELECT * FROM before`.then(([row]) => row, failed);
  if (seen === undefined) return;
  const registeredHere = seen.first === true && typeof seen.registeredFrom === 'string' &&
    noticeNetwork(seen.registeredFrom) === network;
  // A sign-in by mailed code is always announced: so a mailbox thief cannot sign in unseen.
  if (way !== 'code' && (seen.known === true || registeredHere || seen.wanted !== true)) return;
  const owner = { email: seen.email as string, name: seen.name as string, locale: seen.locale as string | null };
  const quotaKey = accountQuotaKey(deps.keys, seen.publicId as string);
  const sent = await inTransaction(deps.sql, async (tx) => {
    // A code sign-in is bounded by the codes its address may ask for (ten a day), and is never held back.
    const capped = way !== 'code' && (await reserveAddressRequest(tx, 'sign-in-notice', quotaKey, now, noticesPerDay));
    if (capped) return false;
    const values = { client: family, way: wayText[way], new_pair: seen.known === true ? '' : 'yes' };
    await enqueueMail(tx, noticeMail('new-sign-in', owner, now, client.address, values), deps.mailer, now);
    return true;
  }).catch((error: unknown) => {
    deps.log.error('a sign-in notice could not be queued', { error: String(error) });
    return false;
  });
  if (sent) deps.outbox.wake();
}

/** The network a notice compares: an IPv4 address's /24, an IPv6 address's /64. */
export function noticeNetwork(address: string): string {
  const network = clientNetwork(address);
  return isIP(network) === 4 ? `${network.split('.').slice(0, 3).join('.')}.0/24` : network;
}

/** Browsers and common programs by their user agent; anything else is 'another program'. */
const families: Array<[RegExp, string]> = [
  [/\bEdg(?:e|A|iOS)?\//, 'Edge'], [/\bOPR\//, 'Opera'], [/\bFirefox\/|\bFxiOS\//, 'Firefox'],
  [/\bChrom(?:e|ium)\/|\bCriOS\//, 'Chrome'], [/\bVersion\/[\d.]+.*Safari\//, 'Safari'],
  [/^curl\//, 'curl'], [/^Wget\//, 'Wget'], [/^okhttp\//, 'OkHttp'], [/^(?:python-requests|Python-urllib)\//, 'Python'],
  [/^Go-http-client\//, 'Go'], [/^(?:node|undici)\b/, 'Node.js'], [/^Dart\//, 'Dart'], [/^Java\//, 'Java'],
  [/^PostmanRuntime\//, 'Postman'],
];

/**
 * The client's family from its user agent: one of a fixed list (a browser's name, a common
 * program), 'another program', or 'an unnamed client' without one. Never the caller's own text:
 * it goes into the owner's mail, and one row per family is kept.
 */
export function clientFamily(userAgent: string): string {
  if (userAgent.trim() === '') return 'an unnamed client';
  return families.find(([pattern]) => pattern.test(userAgent))?.[1] ?? 'another program';
}

/** Forgets the pairs not seen in 30 days: a sign-in from them is new again. */
export async function deleteForgottenSignInClients(sql: Sql, now: Date): Promise<number> {
  const before = new Date(now.getTime() - rememberedDays * 24 * 3600 * 1000);
  return (await sql`DELETE FROM sign_in_clients WHERE last_seen_at < ${before}`).count;
}
