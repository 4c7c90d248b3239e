import { loginAccountColumns, type LoginAccount } from '../../core/accounts.ts';
import type { Sql, Transaction } from '../../storage/db.ts';

/** One trip to a provider (sql/028): what the callback checks, kept until used once or expired. */
export type Attempt = {
  provider: string; nonce: string; verifier: Buffer; browserHash: Buffer | null; redirectUri: string;
  clientState: string; codeChallenge: string; accountId: string | null; sessionId: string | null;
};

export async function insertAttempt(sql: Sql, stateHash: Buffer, attempt: Attempt, expiresAt: Date): Promise<void> {
  const { provider, nonce, verifier, browserHash, redirectUri, clientState, codeChallenge, accountId, sessionId } =
    attempt;
  await sql`INSERT INTO oidc_attempts ${sql({
    state_hash: stateHash, provider, nonce, verifier, browser_hash: browserHash, redirect_uri: redirectUri,
    client_state: clientState, code_challenge: codeChallenge, account_id: accountId, session_id: sessionId,
    expires_at: expiresAt,
  })}`;
}

const attemptColumns = (sql: Sql) => sql`
  provider, nonce, verifier, browser_hash AS "browserHash", redirect_uri AS "redirectUri",
  client_state AS "clientState", code_challenge AS "codeChallenge", account_id AS "accountId",
  session_id AS "sessionId"`;

/** The live attempt of this provider with this state's hash, without using it up. */
export async function findAttempt(sql: Sql, stateHash: Buffer, provider: string, now: Date): Promise<Attempt | null> {
  const rows = await sql`
    SELECT ${attemptColumns(sql)} FROM oidc_attempts
    WHERE state_hash = ${stateHash} AND provider = ${provider} AND expires_at > ${now}`;
  return (rows[0] as Attempt | undefined) ?? null;
}

/** Uses the attempt up: true for the one request that deleted it. */
export async function spendAttempt(sql: Sql, stateHash: Buffer): Promise<boolean> {
  const rows = await sql`DELETE FROM oidc_attempts WHERE state_hash = ${stateHash} RETURNING 1`;
  return rows.count === 1;
}

/** What a code of the callback stands for: a provider's identity, and for a link the account and session. */
export type Grant = {
  provider: string; issuer: string; subject: string; email: string | null; emailVerified: boolean; redirectUri: string;
  codeChallenge: string; accountId: string | null; sessionId: string | null;
};

export async function insertGrant(sql: Sql, codeHash: Buffer, grant: Grant, expiresAt: Date): Promise<void> {
  const { provider, issuer, subject, email, emailVerified, redirectUri, codeChallenge, accountId, sessionId } = grant;
  await sql`INSERT INTO oidc_codes ${sql({
    code_hash: codeHash, provider, issuer, subject, email, email_verified: emailVerified, redirect_uri: redirectUri,
    code_challenge: codeChallenge, account_id: accountId, session_id: sessionId, expires_at: expiresAt,
  })}`;
}

/** The live code's grant, without using it up (the token endpoint may answer mfa_required first). */
export async function findGrant(sql: Sql | Transaction, codeHash: Buffer, now: Date): Promise<Grant | null> {
  const rows = await sql`
    SELECT provider, issuer, subject, email, email_verified AS "emailVerified", redirect_uri AS "redirectUri",
      code_challenge AS "codeChallenge",
      account_id AS "accountId", session_id AS "sessionId"
    FROM oidc_codes WHERE code_hash = ${codeHash} AND expires_at > ${now}`;
  return (rows[0] as Grant | undefined) ?? null;
}

export async function spendGrant(sql: Sql | Transaction, codeHash: Buffer): Promise<boolean> {
  const rows = await sql`DELETE FROM oidc_codes WHERE code_hash = ${codeHash} RETURNING 1`;
  return rows.count === 1;
}

/** The account an identity is linked to, as every way in reads it (core/accounts.ts loginAccountColumns). */
export async function findLinkedAccount(
  sql: Sql, issuer: string, subject: string,
): Promise<(LoginAccount & { identityId: string }) | null> {
  const rows = await sql`
    SELECT ${loginAccountColumns(sql)}, i.id AS "identityId" FROM identities i JOIN accounts a ON a.id = i.account_id
    WHERE i.issuer = ${issuer} AND i.subject = ${subject} AND a.activated_at IS NOT NULL`;
  return (rows[0] as (LoginAccount & { identityId: string }) | undefined) ?? null;
}

type Owner = { id: string; publicId: string; name: string; email: string; locale: string | null };

/** The account that holds an address, for the notice to its owner; never for signing in. */
export async function findAddressOwner(sql: Sql, email: string): Promise<Owner | null> {
  const rows = await sql`
    SELECT id, public_id AS "publicId", name, email, locale FROM accounts
    WHERE lower(email) = lower(${email}) AND activated_at IS NOT NULL`;
  return (rows[0] as Owner | undefined) ?? null;
}

/**
 * Makes an active account of a name and an address that a trusted provider verified; null, making
 * nothing, when an account (active or pending) has the name or the address (the unique indexes
 * decide), or a live hold keeps the name for another address.
 */
export async function insertProviderAccount(
  tx: Transaction, name: string, email: string, addressKey: Buffer, passwordHash: string, now: Date,
): Promise<{ id: string; publicId: string } | null> {
  const [row] = await tx`
    INSERT INTO accounts (name, email, password_hash, activated_at)
    SELECT ${name}, ${email}, ${passwordHash}, ${now}
    WHERE NOT EXISTS (
      SELECT 1 FROM name_holds WHERE name = ${name} AND expires_at > ${now}
        AND address IS DISTINCT FROM lower(${email}) AND address_key IS DISTINCT FROM ${addressKey})
    ON CONFLICT DO NOTHING
    RETURNING id, public_id AS "publicId"`;
  return (row as { id: string; publicId: string } | undefined) ?? null;
}

export type LinkedIdentity = { id: string; provider: string; createdAt: Date; lastUsedAt: Date | null };

/** Links the identity; null when it is linked already, to this account or another. */
export async function insertIdentity(
  tx: Transaction, id: string, accountId: string, grant: Grant, now: Date,
): Promise<LinkedIdentity | null> {
  const rows = await tx`
    INSERT INTO identities (id, account_id, provider, issuer, subject, created_at)
    VALUES (${id}, ${accountId}, ${grant.provider}, ${grant.issuer}, ${grant.subject}, ${now})
    ON CONFLICT (issuer, subject) DO NOTHING
    RETURNING id, provider, created_at AS "createdAt", last_used_at AS "lastUsedAt"`;
  return (rows[0] as LinkedIdentity | undefined) ?? null;
}

export async function listIdentities(sql: Sql, accountId: string): Promise<LinkedIdentity[]> {
  const rows = await sql`
    SELECT id, provider, created_at AS "createdAt", last_used_at AS "lastUsedAt" FROM identities
    WHERE account_id = ${accountId} ORDER BY created_at, id`;
  return rows as unknown as LinkedIdentity[];
}

export async function deleteIdentity(tx: Transaction, accountId: string, id: string): Promise<string | null> {
  const rows = await tx`DELETE FROM identities WHERE account_id = ${accountId} AND id = ${id} RETURNING provider`;
  return (rows[0]?.provider as string | undefined) ?? null;
}

export async function touchIdentity(sql: Sql | Transaction, id: string, now: Date): Promise<void> {
  await sql`UPDATE identities SET last_used_at = ${now} WHERE id = ${id}`;
}

/** Attempts and codes past their time; both are short-lived, and a stranger can make attempts. */
export async function deleteExpiredAttempts(sql: Sql, now: Date): Promise<number> {
  const attempts = await sql`DELETE FROM oidc_attempts WHERE expires_at <= ${now}`;
  const codes = await sql`DELETE FROM oidc_codes WHERE expires_at <= ${now}`;
  return attempts.count + codes.count;
}
