import { accountActiveMail } from '../../mail/messages.ts';
import { insertEvents } from '../../core/security-events.ts';
import { insertMail, sealMail } from '../../mail/outbox.ts';
import { insertWebhookEvents } from '../../webhooks/events.ts';
import { retryOnce, wakeWorkers, type Client, type UseCaseDeps } from '../../core/transaction.ts';

/** The pending registration a live registration code belongs to, as the code lookup found it. */
export type PendingAccount = { id: string; publicId: string; name: string; email: string; locale: string | null };

/**
 * Turns the pending registration that holds this code into an active account, in one
 * statement: the account row is locked first (the lock order), then the code is used up (the
 * delete is the single-use guarantee: of concurrent requests with one code, one deletes it),
 * the row activated, the event recorded and the welcome queued. False when a concurrent
 * request used the code first.
 */
export async function activateAccount(
  deps: UseCaseDeps, pending: PendingAccount, codeHash: Buffer, client: Client,
): Promise<boolean> {
  const now = deps.clock();
  const mail = sealMail(accountActiveMail(pending), deps.mailer);
  const webhook = deps.webhooks.event('account.activated', pending.publicId, now);
  const { sql } = deps;
  const fromActivated = () => sql`FROM activated`;
  const eventRow = { type: 'activated', clientAddress: client.address, session: null, now } as const;
  const rows = await retryOnce(
    () => sql`
      WITH account AS (
        SELECT id FROM accounts WHERE id = (SELECT ${pending.id}::bigint) AND activated_at IS NULL FOR NO KEY UPDATE
      ), code AS (
        DELETE FROM one_time_codes
        WHERE code_hash = ${codeHash} AND purpose = 'registration' AND expires_at > ${now}
          AND account_id = (SELECT id FROM account)
        RETURNING account_id
      ), activated AS (
        UPDATE accounts SET activated_at = ${now}, expires_at = NULL
        WHERE id = (SELECT account_id FROM code) RETURNING id, email
      ), event AS (
        ${insertEvents(sql, { ...eventRow, account: sql`id` }, fromActivated())}
      )${webhook === null ? sql`` : sql`, webhook AS (${insertWebhookEvents(sql, webhook, fromActivated())})`}
      ${insertMail(sql, mail, sql`email`, now, fromActivated())}
      RETURNING 1`,
  );
  if (rows.count === 0) return false;
  wakeWorkers(deps);
  return true;
}
