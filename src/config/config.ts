import { BlockList, isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { resolve } from 'node:path';
import { canonicalLocale } from './locales.ts';
import type { RelyingParty } from '../features/passkeys/webauthn.ts';
import type { OidcSettings } from '../features/oidc/settings.ts';
import type { EncryptionKey } from '../core/sealing.ts';

export type ScryptParams = { ln: number; r: number; p: number };
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Raised for a bad environment variable; its message is one line naming the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export const defaultScrypt: ScryptParams = { ln: 15, r: 8, p: 3 };
/** The memory one scrypt call may hold: 8 times the default's 32 MiB. */
const maxScryptMemoryBytes = 256 * 2 ** 20;

/** What one scrypt call holds in memory: 128 × N × r bytes. */
export function scryptMemoryBytes(params: ScryptParams): number {
  return 128 * 2 ** params.ln * params.r;
}
const minTokenSecretBytes = 32;

/** Reads one variable's value (undefined: unset; empty counts as unset but in FEATURES); refuses a bad one. */
type Parser<T> = (raw: string | undefined, name: string) => T;

/**
 * The settings that one variable decides alone: the field, its variable and its parser, which
 * holds the default and the rule. The settings that depend on each other follow in parseConfig.
 */
const table = {
  port: ['PORT', integer(8080, 0, 65535)],
  host: ['HOST', checked(isIpOrHostName, 'an IP address (127.0.0.1, 0.0.0.0, ::) or a host name', '127.0.0.1')],
  databaseUrl: ['DATABASE_URL', parseDatabaseUrl],
  /** Bounds on every wait for PostgreSQL, in ms (storage/db.ts); 0 leaves a timeout to the server's settings. */
  statementTimeoutMs: ['DATABASE_STATEMENT_TIMEOUT', integer(5_000, 0, 600_000)],
  lockTimeoutMs: ['DATABASE_LOCK_TIMEOUT', integer(2_000, 0, 600_000)],
  queueTimeoutMs: ['DATABASE_QUEUE_TIMEOUT', integer(2_000, 1, 60_000)],
  dataDir: ['DATA_DIR', (raw) => resolve(raw || '.data')],
  /** Null: mail is written as files under DATA_DIR/mail. */
  smtpUrl: ['SMTP_URL', url(['smtp:', 'smtps:'])],
  mailFrom: ['MAIL_FROM', checked(
    (raw) => mailbox.test(raw), 'an address or Name <address> (quote a name that has a comma)',
    'Accounts <no-reply@localhost>',
  )],
  /** Operator's mail templates (mail/templates.ts); null: the built-in English texts only. */
  mailTemplatesDir: ['MAIL_TEMPLATES_DIR', (raw) => (raw ? resolve(raw) : null)],
  /** The locale of mail to a reader who chose none; null: English. */
  mailDefaultLocale: ['MAIL_DEFAULT_LOCALE', checked(
    (raw) => canonicalLocale(raw) === raw, 'a locale such as de, de-AT or pt-BR, in that case',
  )],
  productName: ['PRODUCT_NAME', checked(printable(100), '1 to 100 printable characters')],
  supportContact: ['SUPPORT_CONTACT', checked(
    printable(200), '1 to 200 printable characters (an address, a URL or a phone number)',
  )],
  /** Where a code mail's link leads; the code is added as a fragment, so the URL must have none. */
  appUrl: ['APP_URL', checked(
    (raw) => URL.canParse(raw) && /^https?:$/.test(new URL(raw).protocol) && !raw.includes('#'),
    'an http or https URL without a fragment (#), such as https://app.example.com/account',
  )],
  /** HS256 (TOKEN_SECRET) or ES256 (signing keys kept sealed in the database, published as a JWKS). */
  tokenAlg: ['TOKEN_ALG', oneOf(['HS256', 'ES256'] as const, 'HS256')],
  /** HS256 keys, first signs, all verify. Null only in embedded mode, where main.ts supplies one, and with ES256. */
  tokenSecrets: ['TOKEN_SECRET', parseTokenSecrets],
  tokenTtlSeconds: ['TOKEN_TTL', integer(900, 60, 7 * 24 * 3600)],
  refreshTtlSeconds: ['REFRESH_TTL', integer(30 * 24 * 3600, 300, 365 * 24 * 3600)],
  tokenIssuer: ['TOKEN_ISSUER', claim('account-service')],
  /** Null: tokens carry no `aud`, and tokens with one are refused. */
  tokenAudience: ['TOKEN_AUDIENCE', claim(null)],
  regCodeTtlSeconds: ['REG_CODE_TTL', integer(1800, 60, 7 * 24 * 3600)],
  resetCodeTtlSeconds: ['RESET_CODE_TTL', integer(900, 60, 24 * 3600)],
  emailCodeTtlSeconds: ['EMAIL_CODE_TTL', integer(1800, 60, 24 * 3600)],
  scrypt: ['SCRYPT_PARAMS', parseScryptParams],
  eventRetentionDays: ['EVENT_RETENTION_DAYS', integer(90, 1, 3650)],
  hashConcurrency: ['HASH_CONCURRENCY', integer(4, 1, 64)],
  /** Failed password checks one sign-in identifier may take an hour, from all client addresses. */
  loginFailuresPerHour: ['LOGIN_FAILURES_PER_HOUR', integer(100, 1, 100_000)],
  /** Requests per minute per client address on each unauthenticated POST; 0 turns it off. */
  rateLimit: ['RATE_LIMIT', integer(20, 0, 1_000_000)],
  /** Sign-ins per minute per account and network, refreshes and listings per minute per session; 0 turns it off. */
  accountRateLimit: ['ACCOUNT_RATE_LIMIT', integer(30, 0, 1_000_000)],
  /** Live sessions an account may hold; a sign-in beyond ends the least recently used. */
  sessionsPerAccount: ['SESSIONS_PER_ACCOUNT', integer(100, 1, 10_000)],
  /** Days a deleted account's name stays held for its address; 0 frees it at once. */
  nameHoldDays: ['NAME_HOLD_DAYS', integer(30, 0, 3650)],
  trustProxy: ['TRUST_PROXY', integer(0, 0, 10)],
  /** Exact origins allowed to call from a browser; empty means no CORS at all. */
  corsOrigins: ['CORS_ORIGINS', parseOrigins],
  /** Null: /metrics is public and leaves out the gauges that follow single accounts. */
  metricsToken: ['METRICS_TOKEN', secretToken(16)],
  logLevel: ['LOG_LEVEL', oneOf(['debug', 'info', 'warn', 'error'] as const, 'info')],
  /** The optional features that are on; registration, password, sessions and account always are. */
  features: ['FEATURES', parseFeatures],
  /** A range service in the form of the Pwned Passwords range API (features/common-passwords); null: not asked. */
  breachedPasswordsUrl: ['BREACHED_PASSWORDS_URL', url(['https:', 'http:'])],
} satisfies Record<string, [string, Parser<unknown>]>;

/** Reads the variable `name` with `parse`. */
type Value = <T>(name: string, parse: Parser<T>) => T;

type Table = typeof table;
type Settings = { -readonly [K in keyof Table]: ReturnType<Table[K][1]> };

/** The variables read outside the table, by the settings that depend on each other. */
const relatedVariables = [
  'ENCRYPTION_KEYS', 'TOTP_ISSUER', 'ADMIN_PORT', 'ADMIN_HOST', 'ADMIN_TOKEN', 'WEBHOOK_URL', 'WEBHOOK_SECRET',
  'WEBAUTHN_RP_ID', 'WEBAUTHN_ORIGINS', 'WEBAUTHN_RP_NAME', 'OIDC_PROVIDERS', 'OIDC_REDIRECT_URIS', 'NODE_ENV',
];
/** The variables named after a provider of OIDC_PROVIDERS (OIDC_<NAME>_ISSUER and so on), known to be ours. */
const providerVariable = /^OIDC_[A-Z0-9_]+_(?:ISSUER|CLIENT_ID|CLIENT_SECRET|TRUST_EMAIL)$/;
/** Every variable the service reads, in the order --help and docs/configuration.md list them. */
export const settingNames: readonly string[] = [...Object.values(table).map(([name]) => name), ...relatedVariables];

export type Config = Settings & {
  database: DatabaseBounds;
  /** Seal data at rest; first seals, all open. Null only in embedded mode, where main.ts supplies one. */
  encryptionKeys: EncryptionKey[] | null;
  /** The issuer an authenticator app shows: TOTP_ISSUER, else TOKEN_ISSUER's host, else TOKEN_ISSUER. */
  totpIssuer: string;
  /** The admin API's own listener and the token it answers (ADMIN_*); null: there is no admin API. */
  admin: { host: string; port: number; token: string } | null;
  /** Passkeys' relying party (WEBAUTHN_*); null: the passkey routes answer 404 (main.ts fills it in embedded mode). */
  webauthn: RelyingParty | null;
  /** Where events are POSTed, and the keys that sign them (the first is current); null: no webhooks. */
  webhook: { url: string; keys: Buffer[] } | null;
  /** OpenID providers (OIDC_*), parsed by their feature (features/oidc/settings.ts) in main.ts; null: off. */
  oidc: OidcSettings | null;
  /** Human-readable reasons why the configuration is weaker than production defaults. */
  warnings: string[];
};

export type DatabaseBounds = { statementTimeoutMs: number; lockTimeoutMs: number; queueTimeoutMs: number };

export function parseConfig(env: NodeJS.ProcessEnv): Config {
  const read = (name: string) => env[name];
  const value: Value = (name, parse) => parse(read(name), name);
  const settings = Object.fromEntries(
    Object.entries(table).map(([field, [name, parse]]) => [field, (parse as Parser<unknown>)(read(name), name)]),
  ) as Settings;
  const { databaseUrl, tokenSecrets, scrypt, smtpUrl, metricsToken, port, host } = settings;
  const warnings: string[] = [];
  // NODE_ENV=production (the image sets it) never falls back to the embedded database or to mail files.
  const missing = ['DATABASE_URL', 'SMTP_URL'].filter((name) => env.NODE_ENV === 'production' && !env[name]);
  if (missing.length > 0) {
    throw new ConfigError(`${missing.join(' and ')} must be set with NODE_ENV=production (unset, the service would ` +
      'use an embedded development database or write mail to files); unset NODE_ENV to try it out');
  }
  if (databaseUrl !== null && tokenSecrets === null && settings.tokenAlg === 'HS256') {
    throw new ConfigError(
      'TOKEN_SECRET is required when DATABASE_URL is set and TOKEN_ALG is HS256 (one or more comma-separated ' +
        'secrets of at least 32 bytes)',
    );
  }
  const encryptionKeys = parseEncryptionKeys(read('ENCRYPTION_KEYS'), tokenSecrets ?? []);
  if (databaseUrl !== null && encryptionKeys === null) {
    throw new ConfigError(`ENCRYPTION_KEYS is required when DATABASE_URL is set (${encryptionKeysForm})`);
  }
  if (scryptMemoryBytes(scrypt) > maxScryptMemoryBytes) {
    // Each hash holds this much at once, HASH_CONCURRENCY of them: gigabytes would end the process.
    throw new ConfigError(
      `SCRYPT_PARAMS ${formatScryptParams(scrypt)} needs ${Math.round(scryptMemoryBytes(scrypt) / 2 ** 20)} MiB ` +
        `per hash; at most ${maxScryptMemoryBytes / 2 ** 20} MiB (128 × 2^ln × r bytes)`,
    );
  }
  if (scrypt.ln < defaultScrypt.ln || scrypt.r < defaultScrypt.r || scrypt.p < defaultScrypt.p) {
    warnings.push(
      `SCRYPT_PARAMS ${formatScryptParams(scrypt)} is weaker than the default ` +
        `${formatScryptParams(defaultScrypt)}; use it only for tests`,
    );
  }
  // An external database means production; these two are fine only on a developer's machine.
  if (databaseUrl !== null && smtpUrl === null) {
    warnings.push(
      'SMTP_URL is not set: mail, codes included, is written as plain-text files under DATA_DIR/mail instead of ' +
        'being sent',
    );
  }
  if (databaseUrl !== null && metricsToken === null) {
    warnings.push('METRICS_TOKEN is not set: /metrics is open to anyone who reaches the service');
  }
  const config: Config = {
    ...settings,
    database: {
      statementTimeoutMs: settings.statementTimeoutMs,
      lockTimeoutMs: settings.lockTimeoutMs,
      queueTimeoutMs: settings.queueTimeoutMs,
    },
    encryptionKeys,
    totpIssuer: parseTotpIssuer(value, settings.tokenIssuer),
    admin: parseAdmin(value, port, metricsToken, warnings),
    webhook: parseWebhook(value, host, port),
    webauthn: parseRelyingParty(value),
    oidc: null,
    warnings,
  };
  // NODE_ENV is everyone's: NODE_OPTIONS and the like are not taken for typos of it.
  const ours = settingNames.filter((name) => name !== 'NODE_ENV');
  warnings.push(...lookalikeWarnings(Object.keys(env), ours), ...databaseHints(env, databaseUrl));
  return config;
}

/**
 * One warning for each variable that is not one of ours but looks like it: a known variable's
 * first word and an underscore (TOKEN_TLL, SMTP_HOST), or a known name within a typo or two
 * (DATABSE_URL). Anything else in the environment is someone else's and is left alone.
 */
export function lookalikeWarnings(names: readonly string[], known: readonly string[]): string[] {
  const warnings: string[] = [];
  for (const name of names) {
    if (known.includes(name) || providerVariable.test(name) || !/^[A-Z][A-Z0-9_]*$/.test(name)) continue;
    const near = known.filter((candidate) => editDistance(name, candidate) <= (candidate.length > 5 ? 2 : 1));
    const sharingWord = known.filter((candidate) =>
      candidate.includes('_') && name.startsWith(`${candidate.split('_')[0]}_`));
    const guesses = [...new Set([...near, ...sharingWord])];
    if (guesses.length > 0) {
      warnings.push(
        `${name} is not a variable of this service and is ignored; did you mean ` +
          `${guesses.slice(0, 3).join(' or ')}?`,
      );
    }
  }
  return warnings;
}

/** What people set for a database, meaning DATABASE_URL: said at once, not guessed at. */
const databaseAliases = ['POSTGRES_URL', 'POSTGRESQL_URL', 'PG_URL', 'DB_URL', 'DATABASE_URI'];
const libpqHosts = ['PGHOST', 'PGPORT', 'PGDATABASE', 'PGUSER'];

/**
 * One warning for each variable that names a database the service will not use: another name
 * for DATABASE_URL, or libpq's PGHOST and the like while DATABASE_URL is unset (the embedded
 * database runs then; with DATABASE_URL set, the driver does read them for what the URL leaves
 * out). Never the value: it may hold a password.
 */
function databaseHints(given: NodeJS.ProcessEnv, databaseUrl: string | null): string[] {
  const set = (name: string) => given[name] !== undefined && given[name] !== '';
  const aliases = databaseAliases.filter(set).map((name) =>
    `${name} is not read by this service; set DATABASE_URL (postgres://user:password@host:port/database)`);
  const libpq = databaseUrl !== null ? [] : libpqHosts.filter(set).map((name) =>
    `${name} is set but DATABASE_URL is not: the embedded database is used; ` +
    `set DATABASE_URL (postgres:/// takes the host from ${name})`);
  return [...aliases, ...libpq];
}

/** Edit distance: the fewest one-character insertions, deletions, substitutions and swaps of neighbours from a to b. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      const swapped = i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1];
      if (swapped) current[j] = Math.min(current[j]!, before[j - 2]! + 1);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * A parser that takes a value `isValid` accepts, and gives `fallback` when the variable is unset
 * or empty. Anything else is refused in one line that names the variable, says what it must be
 * and repeats the value: so only for variables that hold no secret (secrets, and URLs that may
 * carry a password, are refused by their own parsers without the value).
 */
function checked<T extends string | null = null>(
  isValid: (raw: string) => boolean, expected: string, fallback: T = null as T,
): Parser<string | T> {
  return (raw, name) => {
    if (!raw) return fallback;
    if (!isValid(raw)) throw new ConfigError(`${name} must be ${expected}, got ${JSON.stringify(raw)}`);
    return raw;
  };
}

function integer(fallback: number, min: number, max: number): Parser<number> {
  const inRange = (value: string) => /^[0-9]{1,9}$/.test(value) && Number(value) >= min && Number(value) <= max;
  const parse = checked(inRange, `a whole number from ${min} to ${max}`);
  return (raw, name) => (raw ? Number(parse(raw, name)) : fallback);
}

/** A token claim value: printable ASCII without spaces, as issuers and audiences are (URIs or names). */
function claim<T extends string | null>(fallback: T): Parser<string | T> {
  return checked((raw) => /^[\x21-\x7e]{1,200}$/.test(raw), '1 to 200 printable characters without spaces', fallback);
}

function oneOf<T extends string>(allowed: readonly T[], fallback: T): Parser<T> {
  const parse = checked((value) => (allowed as readonly string[]).includes(value), `one of ${allowed.join(', ')}`);
  return (raw, name) => (parse(raw, name) as T | null) ?? fallback;
}

/** A URL of one of `protocols`; the value may hold a password, so it is never echoed. */
function url(protocols: string[]): Parser<string | null> {
  return (raw, name) => {
    if (!raw) return null;
    if (!URL.canParse(raw)) throw new ConfigError(`${name} is not a valid URL`);
    const parsed = new URL(raw);
    if (!protocols.includes(parsed.protocol) || parsed.hostname === '') {
      throw new ConfigError(`${name} must be a URL of the form ${protocols[0]}//host:port/...`);
    }
    return raw;
  };
}

/** A secret of `min` to 256 printable characters without spaces: says what is wrong, never what it is. */
function secretToken(min: number): Parser<string | null> {
  return (raw, name) => {
    if (!raw) return null;
    if (!/^[\x21-\x7e]+$/.test(raw) || raw.length < min || raw.length > 256) {
      throw new ConfigError(`${name} must be ${min} to 256 printable characters without spaces`);
    }
    return raw;
  };
}

/** The features an operator may turn on or off. */
export const optionalFeatures = [
  'second-factor', 'passkeys', 'email-change', 'common-passwords', 'sign-in-notices', 'export', 'email-code',
] as const;
export type OptionalFeature = (typeof optionalFeatures)[number];
/** The optional features that are on while FEATURES is unset. */
export const defaultFeatures: readonly OptionalFeature[] = [
  'second-factor', 'passkeys', 'email-change', 'common-passwords', 'sign-in-notices', 'export',
];

function parseFeatures(raw: string | undefined): OptionalFeature[] {
  if (raw === undefined) return [...defaultFeatures];
  const named = raw.split(',').map((name) => name.trim()).filter((name) => name !== '');
  for (const name of named) {
    if (!(optionalFeatures as readonly string[]).includes(name)) {
      throw new ConfigError(
        `FEATURES names "${name.slice(0, 40)}", which is no optional feature: give a comma-separated list of ` +
          `${optionalFeatures.join(', ')} (registration, password, sessions and account are always on)`,
      );
    }
  }
  return optionalFeatures.filter((feature) => named.includes(feature));
}

const targetSessionAttrs = ['read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];

/**
 * Every form the postgres driver reads:
 * `postgres://[user[:password]@][host[:port][,host[:port]…]][/database][?param=value…]`, with
 * several hosts for failover (libpq's form, with `target_session_attrs`), or none for the
 * driver's defaults (PGHOST, a Unix socket). What can be checked without refusing a standard
 * form is checked: the scheme, each host and port, the database name, and the query parameters
 * the driver itself would refuse only at the first connection. The value may hold a password,
 * so it is never echoed.
 */
export function parseDatabaseUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  const match = /^(postgres|postgresql):\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/.exec(raw);
  if (match === null) {
    throw new ConfigError(
      'DATABASE_URL must look like postgres://user:password@host:port/database (several host:port pairs separated ' +
        'by commas for failover)',
    );
  }
  const [, , userInfo = '', hostList = '', path = '', query = ''] = match;
  const hosts = hostList === '' ? [] : hostList.split(',');
  const badHost = hosts.findIndex((host) => !isHostAndPort(host));
  if (badHost !== -1) {
    throw new ConfigError(
      `DATABASE_URL host ${badHost + 1} must be host, host:port or [IPv6]:port with a port from 1 to 65535`,
    );
  }
  // The URL parser checks the escapes of the user, password and path, with the first host in place
  // of the list, as the driver does.
  try {
    const credentials = userInfo === '' ? '' : `${userInfo}@`;
    const parsed = new URL(`postgres://${credentials}${hosts[0] ?? 'localhost'}${path}${query}`);
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
    decodeURIComponent(parsed.pathname);
    const attrs = parsed.searchParams.get('target_session_attrs');
    if (attrs !== null && !targetSessionAttrs.includes(attrs)) {
      throw new ConfigError(`DATABASE_URL target_session_attrs must be one of ${targetSessionAttrs.join(', ')}`);
    }
    const prepare = parsed.searchParams.get('prepare');
    if (prepare !== null && !['true', 'false'].includes(prepare)) {
      throw new ConfigError('DATABASE_URL prepare must be true or false');
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError('DATABASE_URL is not a valid URL (a user, password or database name with a bad %-escape?)');
  }
  return raw;
}

function isHostAndPort(value: string): boolean {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/.exec(value);
  if (match === null) return false;
  const [, host = '', port] = match;
  const socketPath = host.startsWith('%2F') || host.startsWith('%2f');
  const validHost = host.startsWith('[')
    ? isIP(host.slice(1, -1)) === 6
    : isIP(host) !== 0 || isHostName(host) || socketPath;
  return validHost && (port === undefined || (Number(port) >= 1 && Number(port) <= 65535));
}

const mailAddress = /[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.)*[A-Za-z0-9-]{1,63}/;
/** A quoted string, or a phrase without the characters that would end or split it. */
const displayName = /"(?:[^"\\\x00-\x1f]|\\.)*"|[^"(),:;<>@[\]\\\x00-\x1f\x7f]+/;
const mailbox = new RegExp(`^(?:${mailAddress.source}|(?:${displayName.source})? *<${mailAddress.source}>)$`);

function parseOrigins(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  const origins = raw.split(',').map((origin) => origin.trim());
  const bad = origins.find((origin) => !isOrigin(origin));
  if (bad !== undefined) {
    throw new ConfigError(
      `CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com, got ` +
        `${JSON.stringify(bad)}`,
    );
  }
  return origins;
}

/**
 * WEBAUTHN_RP_ID, WEBAUTHN_ORIGINS and WEBAUTHN_RP_NAME, never derived from a request's Host or
 * Origin (which whoever sends the request chooses). Each origin's host must be the RP ID or
 * end with '.' and it, as browsers require.
 */
function parseRelyingParty(value: Value): RelyingParty | null {
  const isDomain = (raw: string) => /^[a-z0-9.-]{1,253}$/.test(raw);
  const id = value('WEBAUTHN_RP_ID', checked(isDomain, 'a lower-case domain such as example.com'));
  const listed = value('WEBAUTHN_ORIGINS', (raw) => raw ?? '');
  const origins = listed.split(',').map((origin) => origin.trim()).filter(Boolean);
  const name = value('WEBAUTHN_RP_NAME', checked(printable(64), '1 to 64 printable characters'));
  if (id === null && origins.length === 0) return null;
  if (id === null || origins.length === 0) {
    throw new ConfigError('WEBAUTHN_RP_ID and WEBAUTHN_ORIGINS must be set together');
  }
  const onRpId = (origin: string) => new URL(origin).hostname === id || new URL(origin).hostname.endsWith(`.${id}`);
  const bad = origins.find((origin) => !isOrigin(origin) || !onRpId(origin));
  if (bad !== undefined) {
    throw new ConfigError(
      `WEBAUTHN_ORIGINS must be exact origins on WEBAUTHN_RP_ID or its subdomains, got ${JSON.stringify(bad)}`,
    );
  }
  return { id, origins, name: name ?? id };
}

/**
 * ADMIN_PORT turns the admin API on, on a listener of its own (never the public port), on
 * ADMIN_HOST (loopback unless said), answering ADMIN_TOKEN only. The token opens every account,
 * so a short or repetitive one is refused, never echoed.
 */
function parseAdmin(
  value: Value,
  port: number,
  metricsToken: string | null,
  warnings: string[],
): Config['admin'] {
  const adminPort = value('ADMIN_PORT', integer(-1, 0, 65535));
  const hostForm = 'an IP address (127.0.0.1, ::1) or a host name';
  const host = value('ADMIN_HOST', checked(isIpOrHostName, hostForm));
  const token = value('ADMIN_TOKEN', (raw) => raw ?? '');
  const form = '32 to 256 printable characters without spaces, at least 10 of them different: openssl rand -base64 32';
  if (adminPort === -1) {
    if (host !== null || token !== '') {
      throw new ConfigError('ADMIN_HOST and ADMIN_TOKEN need ADMIN_PORT (the admin API)');
    }
    return null;
  }
  if (adminPort === port && port !== 0) throw new ConfigError(`ADMIN_PORT must differ from PORT (${port})`);
  if (token === '') throw new ConfigError(`ADMIN_TOKEN is required when ADMIN_PORT is set (${form})`);
  const weak = !/^[\x21-\x7e]{32,256}$/.test(token) || new Set(token).size < 10;
  if (weak) throw new ConfigError(`ADMIN_TOKEN must be ${form}`);
  if (token === metricsToken) throw new ConfigError('ADMIN_TOKEN must differ from METRICS_TOKEN (one purpose a token)');
  if (host === null) return { host: '127.0.0.1', port: adminPort, token };
  const family = isIP(host);
  if (host !== 'localhost' && !(family !== 0 && loopback.check(host, family === 4 ? 'ipv4' : 'ipv6'))) {
    warnings.push(`ADMIN_HOST ${host} is not a loopback address: the admin API can be reached from the network`);
  }
  return { host, port: adminPort, token };
}

function parseWebhook(value: Value, host: string, port: number): Config['webhook'] {
  const target = value('WEBHOOK_URL', url(['https:', 'http:']));
  const secrets = value('WEBHOOK_SECRET', (raw) => raw ?? '').split(/[\s,]+/).filter((entry) => entry !== '');
  if (target === null) {
    if (secrets.length > 0) throw new ConfigError('WEBHOOK_SECRET is set but WEBHOOK_URL is not');
    return null;
  }
  if (secrets.length === 0) {
    throw new ConfigError(
      'WEBHOOK_SECRET is required when WEBHOOK_URL is set (whsec_ and the base64 of 24 to 64 random bytes)',
    );
  }
  const keys = secrets.map((secret, index) => {
    const key = decodeWebhookSecret(secret);
    // Say which entry is wrong, never what it holds.
    if (key === null) {
      throw new ConfigError(`WEBHOOK_SECRET entry ${index + 1} is not whsec_ and the base64 of 24 to 64 bytes`);
    }
    return key;
  });
  if (pointsAtService(new URL(target), host, port)) {
    throw new ConfigError(
      `WEBHOOK_URL points at this service itself (port ${port}); it must name the application's receiver`,
    );
  }
  return { url: target, keys };
}

/** A Standard Webhooks secret: the spec asks for at least 24 random bytes; its libraries take up to 64. */
const minSecretBytes = 24;
const maxSecretBytes = 64;

/** The key a `whsec_<base64>` secret encodes, or null when it is not one of 24 to 64 bytes. */
export function decodeWebhookSecret(value: string): Buffer | null {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(value);
  if (match === null) return null;
  const key = Buffer.from(match[1]!, 'base64');
  // Node's decoder skips what it cannot read; only a clean round trip is the secret as written.
  if (key.toString('base64') !== match[1] || key.length < minSecretBytes || key.length > maxSecretBytes) return null;
  return key;
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/**
 * True when the URL names this service's own port on an address of this machine: its HOST, a
 * loopback or unspecified address, localhost, this host's name, or (listening on all
 * addresses) any address of its interfaces. Events sent there would be requests to the service
 * itself. A DNS name or a proxy that leads back here cannot be told from configuration.
 */
function pointsAtService(url: URL, host: string, port: number): boolean {
  const urlPort = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (urlPort !== port) return false;
  const name = url.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  const family = isIP(name);
  const unspecified = (address: string) => address === '0.0.0.0' || address === '::';
  const local = Object.values(networkInterfaces())
    .flatMap((entries) => (entries ?? []).map((entry) => entry.address.toLowerCase()));
  return (
    name === host.toLowerCase() ||
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    name === hostname().toLowerCase() ||
    (family !== 0 && (loopback.check(name, family === 4 ? 'ipv4' : 'ipv6') || unspecified(name))) ||
    (unspecified(host) && local.includes(name))
  );
}

function parseTokenSecrets(raw: string | undefined): Buffer[] | null {
  if (raw === undefined || raw === '') return null;
  const secrets = raw.split(',').map((secret) => Buffer.from(secret.trim(), 'utf8'));
  secrets.forEach((secret, index) => {
    if (secret.length < minTokenSecretBytes) {
      // Say which entry is short, never what it holds.
      throw new ConfigError(`TOKEN_SECRET entry ${index + 1} is shorter than ${minTokenSecretBytes} bytes`);
    }
  });
  return secrets;
}

/**
 * The Key URI Format forbids a colon in the issuer (it ends the issuer in the label), and a URL
 * issuer would show as one: an issuer URL gives its host name.
 */
function parseTotpIssuer(value: Value, tokenIssuer: string): string {
  const noColon = (raw: string) => /^[^:\x00-\x1f\x7f]{1,100}$/.test(raw);
  const configured = value('TOTP_ISSUER', checked(noColon, '1 to 100 characters without a colon'));
  if (configured !== null) return configured;
  const isWebUrl = URL.canParse(tokenIssuer) && /^https?:$/.test(new URL(tokenIssuer).protocol);
  if (isWebUrl) return new URL(tokenIssuer).hostname;
  return tokenIssuer.replaceAll(':', ' ');
}

const encryptionKeysForm =
  'comma-separated id:key pairs, each key the base64 of 32 random bytes: k1:$(openssl rand -base64 32)';

/** `id:key,…`: ids of letters, digits, `-` and `_`; keys of 32 bytes, none a TOKEN_SECRET (one key, one purpose). */
export function parseEncryptionKeys(raw: string | undefined, tokenSecrets: readonly Buffer[]): EncryptionKey[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const keys = raw.split(',').map((entry, index) => {
    const match = /^\s*([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/]{43}=)\s*$/.exec(entry);
    // Say which entry is wrong, never what it holds.
    if (match === null) {
      throw new ConfigError(`ENCRYPTION_KEYS entry ${index + 1} is not id:key (${encryptionKeysForm})`);
    }
    const key = Buffer.from(match[2]!, 'base64');
    if (tokenSecrets.some((secret) => secret.equals(Buffer.from(match[2]!)) || secret.equals(key))) {
      throw new ConfigError(
        `ENCRYPTION_KEYS entry ${index + 1} is also a TOKEN_SECRET; each key has one purpose, so generate another`,
      );
    }
    return { id: match[1]!, key };
  });
  const ids = keys.map((entry) => entry.id);
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
  if (repeated !== undefined) throw new ConfigError(`ENCRYPTION_KEYS names the key id ${repeated} twice`);
  return keys;
}

/** `ln=15,r=8,p=3`, as SCRYPT_PARAMS and the PHC strings of stored hashes write it. */
export const scryptParamsPattern = /^ln=([0-9]{1,2}),r=([0-9]{1,2}),p=([0-9]{1,2})$/;

export function parseScryptParams(raw: string | undefined): ScryptParams {
  if (raw === undefined || raw === '') return defaultScrypt;
  const match = scryptParamsPattern.exec(raw);
  const [ln, r, p] = match ? match.slice(1).map(Number) : [];
  if (ln === undefined || r === undefined || p === undefined || ln < 1 || ln > 20 || r < 1 || p < 1) {
    throw new ConfigError(
      `SCRYPT_PARAMS must look like ln=15,r=8,p=3 (ln 1-20, r and p at least 1), got ${JSON.stringify(raw)}`,
    );
  }
  return { ln, r, p };
}

export function formatScryptParams(params: ScryptParams): string {
  return `ln=${params.ln},r=${params.r},p=${params.p}`;
}

function isIpOrHostName(value: string): boolean {
  return isIP(value) !== 0 || isHostName(value);
}

/**
 * RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens; not all digits,
 * which would be a bad IPv4 address.
 */
function isHostName(value: string): boolean {
  const labels = value.replace(/\.$/, '').split('.');
  const isLabel = (label: string) => /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label);
  return value.length <= 253 && !/^[0-9.]+$/.test(value) && labels.every(isLabel);
}

/** 1 to `max` characters, none of them a control character. */
function printable(max: number): (raw: string) => boolean {
  return (raw) => new RegExp(`^[^\\x00-\\x1f\\x7f]{1,${max}}$`, 'u').test(raw);
}

/** True for `scheme://host[:port]` with nothing after it, as browsers send in Origin. */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === value;
  } catch {
    return false;
  }
}
