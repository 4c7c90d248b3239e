import type { Transaction } from '../../storage/db.ts';

/**
 * Every column of every table that holds an account's data: the field of the export it becomes,
 * or why it is withheld. test/e2e/export.test.ts holds this table to the schema, so a column
 * added later fails the test until it is exported or its withholding is stated here.
 */
const withheld = (why: string) => ({ withheld: why });
type Column = string | { withheld: string };

export const exportedTables = {
  accounts: {
    key: 'id',
    columns: {
      public_id: 'id', name: 'name', email: 'email', phone: 'phone', locale: 'locale', activated_at: 'created_at',
      disabled_at: 'disabled_at', sign_in_notices: 'sign_in_notices',
      attempt_notified_at: 'last_registration_attempt_notice_at', user_handle: 'passkey_user_handle',
      id: withheld('the row id, internal'), password_hash: withheld('a secret: the password\'s hash'),
      expires_at: withheld('set on pending registrations only'),
      disabled_reason: withheld('the operator\'s note; the application tells the owner in its own words'),
    },
  },
  sessions: {
    key: 'account_id',
    columns: {
      id: 'id', created_at: 'created_at', last_used_at: 'last_used_at', expires_at: 'expires_at',
      client_address: 'client_address', user_agent: 'user_agent', account_id: withheld('the row id, internal'),
    },
  },
  security_events: {
    key: 'account_id',
    columns: {
      type: 'type', occurred_at: 'occurred_at', actor: 'actor', session_id: 'session_id',
      client_address: 'client_address', id: withheld('the row id, internal'),
      account_id: withheld('the row id, internal'),
      reason: withheld('the operator\'s note; the application tells the owner in its own words'),
    },
  },
  passkeys: {
    key: 'account_id',
    columns: {
      id: 'id', name: 'name', created_at: 'created_at', last_used_at: 'last_used_at', credential_id: 'credential_id',
      public_key: 'public_key', algorithm: 'algorithm', sign_count: 'sign_count', transports: 'transports',
      backup_eligible: 'backup_eligible', backed_up: 'backed_up', aaguid: 'aaguid',
      account_id: withheld('the row id, internal'),
    },
  },
  identities: {
    key: 'account_id',
    columns: {
      id: 'id', provider: 'provider', issuer: 'issuer', subject: 'subject', created_at: 'created_at',
      last_used_at: 'last_used_at', account_id: withheld('the row id, internal'),
    },
  },
  second_factors: {
    key: 'account_id',
    columns: {
      created_at: 'created_at', activated_at: 'activated_at', account_id: withheld('the row id, internal'),
      sealed_secret: withheld('a secret: the authenticator\'s key'),
      last_used_step: withheld('a replay guard: the last 30-second step a code was used in'),
    },
  },
  recovery_codes: {
    key: 'account_id',
    columns: { account_id: withheld('the row id, internal'), code_hash: withheld('a secret: exported as a count') },
  },
  one_time_codes: {
    key: 'account_id',
    columns: {
      purpose: 'purpose', created_at: 'created_at', expires_at: 'expires_at', new_email: 'new_email',
      session_id: 'session_id', account_id: withheld('the row id, internal'), code_hash: withheld('a secret'),
    },
  },
  sign_in_clients: {
    key: 'account_id',
    columns: {
      client: 'client', last_seen_at: 'last_seen_at', account_id: withheld('the row id, internal'),
      network_hash: withheld('a keyed hash of a network, which tells nothing without the service\'s key'),
    },
  },
} satisfies Record<string, { key: string; columns: Record<string, Column> }>;

type Row = Record<string, unknown>;

/** The exported columns of one table, read for one account, each under its field's name. */
async function readTable(tx: Transaction, table: keyof typeof exportedTables, accountId: string): Promise<Row[]> {
  const { key, columns } = exportedTables[table];
  const fields = Object.entries(columns as Record<string, Column>)
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string');
  const rows = await tx`
    SELECT ${tx(fields.map(([column]) => column))} FROM ${tx(table)} WHERE ${tx(key)} = ${accountId}`;
  return rows.map((row) => Object.fromEntries(fields.map(([column, field]) => [field, shown(row[column])])));
}

/** Times in UTC ISO 8601, bytes in base64url, the rest as JSON has it. */
function shown(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('base64url');
  return value;
}

/**
 * Everything the service keeps about the account, read in the caller's transaction (which
 * holds the account row): no hash, sealed value, code or token. An operator's event shows no
 * client address, as GET /acc/me/events shows none (where the operator worked from is theirs).
 */
export async function readExport(tx: Transaction, accountId: string, now: Date): Promise<Row> {
  const [account] = await readTable(tx, 'accounts', accountId);
  const events = (await readTable(tx, 'security_events', accountId))
    .map((event) => (event.actor === null ? { ...event, actor: 'client' } : { ...event, client_address: null }));
  const [factor] = await readTable(tx, 'second_factors', accountId);
  // Every column withheld: one empty object a code, so the count is what shows.
  const recoveryCodes = await readTable(tx, 'recovery_codes', accountId);
  return {
    format: 'account-service-export/1',
    exported_at: now.toISOString(),
    account,
    sessions: await readTable(tx, 'sessions', accountId),
    security_events: events,
    passkeys: await readTable(tx, 'passkeys', accountId),
    identities: await readTable(tx, 'identities', accountId),
    second_factor: factor === undefined ? { state: 'off' } : {
      state: factor.activated_at === null ? 'pending' : 'on', ...factor, recovery_codes_left: recoveryCodes.length,
    },
    pending_codes: await readTable(tx, 'one_time_codes', accountId),
    sign_in_clients: await readTable(tx, 'sign_in_clients', accountId),
  };
}
