import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { ConfigError, type Config, type OptionalFeature } from './config/config.ts';
import { connectDatabase, openDatabase, type Sql } from './storage/db.ts';
import type { Deps } from './http/router.ts';
import { createServer, type ServerTimeouts } from './http/server.ts';
import { describeError, type Logger } from './telemetry/log.ts';
import { createOutboxWorker, deleteFinishedMail, finishedMailRetentionMs, type OutboxOptions } from './mail/outbox.ts';
import { createFileTransport, createSmtpTransport, type MailTransport } from './mail/transport.ts';
import { createMailRenderer, loadMailTemplates } from './mail/templates.ts';
import { isSchemaCurrent, loadMigrations, migrate } from './storage/migrations.ts';
import { createLimiter } from './support/concurrency.ts';
import { createPasswordHasher, limitPasswordHasher, type PasswordHasher } from './core/passwords.ts';
import { createRateLimiter } from './http/rate-limit.ts';
import { deleteStaleThrottleRows } from './core/login-throttle.ts';
import { deleteExpiredNameHolds, deleteExpiredRegistrations } from './features/registration/store.ts';
import { deleteStaleQuotas } from './core/address-quotas.ts';
import { loadKeyedHashes } from './core/keyed-hashes.ts';
import { deleteExpiredCodes } from './core/one-time-codes.ts';
import { deleteExpiredChallenges } from './features/passkeys/store.ts';
import { deleteStaleResetRequests } from './features/password/reset-requests.ts';
import { deleteStaleRegistrationRequests } from './features/registration/requests.ts';
import { createRequestResolver } from './request-resolver.ts';
import { wrapOutdatedHashes } from './core/hash-wrapping.ts';
import { routes as allRoutes } from './routes.ts';
import { adminRoutes } from './features/operators/api.ts';
import { createLiveSessionCount, createMetrics } from './telemetry/metrics.ts';
import { fitDocument, readApiDocument } from './http/api-document.ts';
import { createSealer, type EncryptionKey, type Sealer } from './core/sealing.ts';
import { hasLegacySeals, resealAll } from './reseal.ts';
import { version } from './support/version.ts';
import { createTokenService, ecTokenKeys, hmacTokenKeys } from './core/tokens.ts';
import { createSigningKeyRing, deleteRetiredSigningKeys } from './core/signing-keys.ts';
import { deleteExpiredSessions } from './core/sessions.ts';
import { deleteOldEvents, strangerEventRetentionDays } from './core/security-events.ts';
import { createWebhookWorker, deleteDeliveredWebhooks, type WebhookDeliveryOptions } from './webhooks/delivery.ts';
import { disabledWebhooks, enabledWebhooks } from './webhooks/events.ts';
import { clientAddress } from './core/client-address.ts';
import { passkeyGrant } from './features/passkeys/grant.ts';
import { createProviders } from './features/oidc/provider.ts';
import { authorizationCodeGrant } from './features/oidc/routes.ts';
import { deleteExpiredAttempts } from './features/oidc/store.ts';
import { createPasswordScreen, readCommonPasswords } from './features/common-passwords/screen.ts';
import { announceSignIn, deleteForgottenSignInClients } from './features/sign-in-notices/announce.ts';
import { emailCodeGrant } from './features/email-code/routes.ts';
import { deleteStaleSignInCodeRequests, signInCodeTtlSeconds } from './features/email-code/store.ts';

/** Configuration once main.ts has settled the database and the token secrets. */
export type ServiceConfig = Config & { databaseUrl: string; tokenSecrets: Buffer[]; encryptionKeys: EncryptionKey[] };

export type ServiceOptions = {
  config: ServiceConfig;
  log: Logger;
  clock?: () => Date;
  passwords?: PasswordHasher;
  transport?: MailTransport;
  outbox?: Pick<
    OutboxOptions, 'pollMs' | 'wakeJitterMs' | 'maxAttempts' | 'backoffBaseMs' | 'backoffCapMs' | 'leaseMs'
  >;
  webhooks?: Pick<WebhookDeliveryOptions, 'pollMs' | 'timeoutMs' | 'maxAttempts' | 'backoffBaseMs' | 'backoffCapMs'>;
  httpTimeouts?: ServerTimeouts;
  /** Sees the text of every SQL statement and its connection, for tests that compare or count the work of paths. */
  onQuery?: (text: string, connection: number) => void;
};

export type Service = {
  url: string;
  /** The admin API's listener (ADMIN_PORT); null when it is off. */
  adminUrl: string | null;
  server: Server;
  sql: Sql;
  /** Hands a database error to the pool, which replaces itself if the error shows it broken (db.ts). */
  noteDatabaseFailure(error: unknown): void;
  /** Deletes what has expired now, as the minutely sweep does. */
  sweep(): Promise<void>;
  stop(): Promise<void>;
};

/** Expired registrations stay this long so that their code is answered 410, not 404. */
export const expiredRegistrationGraceMs = 60 * 60 * 1000;
const sweepIntervalMs = 60 * 1000;
/** A spent refresh token is kept this long, so that presenting it again is detected as reuse. */
export const spentRefreshTokenRetentionMs = 24 * 3600 * 1000;
const shutdownGraceMs = 8_000;
/** Delivered webhook events (their bodies already erased) are kept this long, for the operator. */
export const deliveredWebhookRetentionMs = 7 * 24 * 3600 * 1000;

/** Connects, migrates, and starts the HTTP server, the outbox worker and the sweep. */
export async function startService(options: ServiceOptions): Promise<Service> {
  const { config, log } = options;
  const clock = options.clock ?? (() => new Date());
  // Refused before anything starts: a fault in a template is the operator's to fix (main.ts checks it first).
  const templates = loadMailTemplates(config.mailTemplatesDir);
  // Unique per instance, so that /metrics can count this instance's own connections.
  const applicationName = `account-service/${randomUUID().slice(0, 8)}`;
  const database = openDatabase(config.databaseUrl, {
    applicationName,
    bounds: config.database,
    onDown: () => log.warn('database unreachable or its connections broken; failing requests at once until it answers'),
    onUp: () => log.info('database answers again; serving with a new connection pool'),
    onUnprepared: () => log.warn(
      'prepared statement missing: a transaction-mode pooler is in front of PostgreSQL; statements are no longer ' +
        'prepared; add prepare=false to DATABASE_URL to start so (docs/operations.md, Poolers)',
    ),
    ...(options.onQuery === undefined ? {} : { onQuery: options.onQuery }),
  });
  const { sql } = database;
  try {
    const migrations = await loadMigrations();
    // On a pool of their own, outside the gate: a migration is one transaction that may
    // outlast the gate's bound on how long request work holds a connection (storage/gate.ts).
    const migrator = connectDatabase(config.databaseUrl, { applicationName, bounds: config.database });
    const applied = await migrate(migrator, migrations).finally(() => migrator.end());
    if (applied.length > 0) log.info('migrations applied', { applied });
    await refuseFeaturesInUse(sql, config.features);

    const transport = options.transport ?? createTransport(config, log);
    const sealer = createSealer(config.encryptionKeys);
    await finishSealUpgrade(sql, sealer, config.tokenSecrets, log);
    const signingKeys =
      config.tokenAlg === 'ES256' ? await createSigningKeyRing(sql, sealer, clock, config.tokenTtlSeconds) : null;
    const tokenKeys = signingKeys === null ? hmacTokenKeys(config.tokenSecrets) : ecTokenKeys(signingKeys.current);
    const onError = database.noteFailure;
    const from = config.mailFrom;
    const outbox = createOutboxWorker({ ...options.outbox, sql, transport, sealer, clock, log, from, onError });
    const mailer = { ...createMailRenderer(templates, config), sealer };
    const addressRequests = createRequestResolver({
      sql,
      mailer,
      log,
      resetCodeTtlSeconds: config.resetCodeTtlSeconds,
      onResolved: outbox.wake,
      pollMs: options.outbox?.pollMs,
      wakeJitterMs: options.outbox?.wakeJitterMs,
      onError: database.noteFailure,
    });
    const webhookWorker = config.webhook === null
      ? null
      : createWebhookWorker({ ...options.webhooks, ...config.webhook, sql, clock, log, onError });
    // Hashing is bounded: HASH_CONCURRENCY at once, four times as many waiting for at most 2 s,
    // 503 past that. The queue is short on purpose: at production cost a hash takes ~0.1-0.5 s,
    // and a longer queue would only make clients wait past any useful timeout (see Performance).
    const unlimitedHasher = options.passwords ?? createPasswordHasher(config.scrypt);
    const passwordLimiter = createLimiter(config.hashConcurrency, config.hashConcurrency * 4, 2_000);
    const liveSessions = createLiveSessionCount(sql, clock);
    // The API document as its file says, fitted to the routes served (api-document.ts).
    const served = allRoutes.filter((route) => route.feature === undefined || isOn(config, route.feature));
    const api = fitDocument(readApiDocument('openapi.json'), served);
    const routes = api.routes;
    const deps: Deps = {
      sql,
      config,
      clock,
      log,
      passwords: limitPasswordHasher(unlimitedHasher, passwordLimiter),
      tokens: createTokenService({
        keys: tokenKeys, ttlSeconds: config.tokenTtlSeconds, issuer: config.tokenIssuer, audience: config.tokenAudience,
      }),
      signingKeys,
      sealer,
      mailer,
      keys: await loadKeyedHashes(sql, sealer),
      outbox,
      addressRequests,
      webhooks: webhookWorker === null ? disabledWebhooks : enabledWebhooks(webhookWorker.wake),
      webhookCounts: () => webhookWorker?.counts() ?? null,
      liveSessions,
      schemaCurrent: () => isSchemaCurrent(sql, migrations),
      clientAddressOf: (req) => clientAddress(req, config.trustProxy),
      oidc: config.oidc === null ? null : createProviders(config.oidc, log),
      announceSignIn: (accountId, client, way) => isOn(config, 'sign-in-notices') || way === 'code'
        ? announceSignIn(deps, accountId, client, way)
        : Promise.resolve(),
      screenPassword: isOn(config, 'common-passwords')
        ? createPasswordScreen(readCommonPasswords(), config.breachedPasswordsUrl, log)
        : () => Promise.resolve(null),
      grants: [
        ...(config.webauthn === null || !isOn(config, 'passkeys') ? [] : [passkeyGrant]),
        ...(config.oidc === null ? [] : [authorizationCodeGrant]),
        ...(isOn(config, 'email-code') ? [emailCodeGrant] : []),
      ],
      rateLimiter: config.rateLimit === 0 ? null : createRateLimiter(config.rateLimit),
      accountRateLimiter: config.accountRateLimit === 0 ? null : createRateLimiter(config.accountRateLimit),
      noteDatabaseFailure: database.noteFailure,
      databaseUp: database.isUp,
      mailServerReachable: () => transport.reachable?.() ?? null,
      databaseConnections: database.connections,
      apiDocument: { ...api.document, info: { ...api.document.info, version } },
      metrics: createMetrics(),
      passwordLimiter,
      applicationName,
    };
    // Deletes what has expired; every minute, and on demand for tests that move the clock.
    // Each table that a stranger or a client can grow has its rule here (docs/operations.md, "Retention").
    const sweep = async () => {
      // Signing keys first, and on their own: a removed key stops verifying even when a step below fails.
      for (const { kid, reason } of (await signingKeys?.refresh()) ?? []) {
        log.error(`the token signing key ${kid} ${reason}`, { kid });
      }
      const now = clock();
      const ago = (ms: number) => new Date(now.getTime() - ms);
      const dayMs = 24 * 3600 * 1000;
      const strangerEventDays = Math.min(config.eventRetentionDays, strangerEventRetentionDays);
      const deleted = {
        registrations: deleteExpiredRegistrations(sql, ago(expiredRegistrationGraceMs)),
        codes: deleteExpiredCodes(sql, ago(expiredRegistrationGraceMs)),
        throttle: deleteStaleThrottleRows(sql, now),
        quotas: deleteStaleQuotas(sql, now),
        sessions: deleteExpiredSessions(sql, now, ago(spentRefreshTokenRetentionMs)),
        events: deleteOldEvents(sql, ago(config.eventRetentionDays * dayMs), ago(strangerEventDays * dayMs)),
        holds: deleteExpiredNameHolds(sql, now),
        mail: deleteFinishedMail(sql, ago(finishedMailRetentionMs)),
        resetRequests: deleteStaleResetRequests(sql, ago(config.resetCodeTtlSeconds * 1000)),
        registrationRequests: deleteStaleRegistrationRequests(sql, now),
        webhooks: deleteDeliveredWebhooks(sql, ago(deliveredWebhookRetentionMs)),
        challenges: deleteExpiredChallenges(sql, now),
        providerAttempts: deleteExpiredAttempts(sql, now),
        signInCodeRequests: deleteStaleSignInCodeRequests(sql, ago(signInCodeTtlSeconds * 1000)),
        signInClients: deleteForgottenSignInClients(sql, now),
      };
      const counts = Object.fromEntries(
        await Promise.all(Object.entries(deleted).map(async ([name, count]) => [name, await count] as const)),
      );
      await Promise.all([webhookWorker?.refreshCounts(), liveSessions.refresh()]);
      const signingKeysRetired =
        signingKeys === null ? 0 : await deleteRetiredSigningKeys(sql, now, config.tokenTtlSeconds);
      log.debug('sweep done', { ...counts, signingKeysRetired });
    };
    const sweepFailed = (error: unknown) => log.warn('sweep failed', describeError(error));
    const sweepTimer = setInterval(() => void sweep().catch(sweepFailed), sweepIntervalMs);
    sweepTimer.unref();
    let stopping = false;
    // In the background: the service answers at once, and requests keep their hashing slots.
    const wrapping = wrapOutdatedHashes(sql, unlimitedHasher, config.scrypt, () => stopping).then(
      (result) => {
        if (result === null) {
          log.info('another instance is wrapping outdated password hashes');
          return;
        }
        const { wrapped, unwrappable } = result;
        if (wrapped > 0) log.info('wrapped outdated password hashes to the current scrypt cost', { wrapped });
        if (unwrappable > 0) {
          const message =
            'password hashes cost more than SCRYPT_PARAMS; until their owners sign in, timing tells them apart';
          log.warn(message, { accounts: unwrappable });
        }
      },
      (error: unknown) => {
        log.warn('wrapping outdated password hashes failed; it is tried again at the next start', describeError(error));
      },
    );

    const timeouts = options.httpTimeouts;
    const server = createServer(deps, routes, timeouts);
    const url = await listen(server, config.port, config.host);
    // The admin API: the same parts, on a listener of its own that no proxy stands before
    // (TRUST_PROXY is not its business) and that no browser calls (no CORS). Its requests are
    // logged, not counted: /metrics may be public, and would tell when operators act.
    const adminConfig = { ...config, trustProxy: 0, corsOrigins: [] };
    const adminDeps = { ...deps, config: adminConfig, metrics: { ...deps.metrics, observe: () => {} } };
    const { admin } = config;
    const adminServer = admin === null ? null : createServer(adminDeps, adminRoutes(admin.token, version), timeouts);
    const adminUrl =
      admin === null
        ? null
        : await listen(adminServer!, admin.port, admin.host).catch((error: unknown) => {
            server.close();
            throw error;
          });
    // Said at start, in one line naming the setting: mail would otherwise wait in the outbox unnoticed.
    void transport.verify?.().catch((error: unknown) => {
      const message = 'SMTP_URL: the mail server cannot be reached; mail waits in the outbox until it can';
      log.error(message, describeError(error));
    });
    outbox.wake();
    addressRequests.wakeLater();
    webhookWorker?.wake();

    return {
      url,
      adminUrl,
      server,
      sql,
      noteDatabaseFailure: database.noteFailure,
      sweep,
      async stop() {
        clearInterval(sweepTimer);
        stopping = true;
        await Promise.all([closeServer(server), adminServer === null ? null : closeServer(adminServer)]);
        await wrapping;
        await addressRequests.stop();
        await outbox.stop();
        await webhookWorker?.stop();
        transport.close();
        await database.end();
      },
    };
  } catch (error) {
    await database.end();
    throw error;
  }
}

/** Whether a feature is on: the optional ones by FEATURES, sign-in with a provider by OIDC_PROVIDERS. */
const isOn = (config: ServiceConfig, feature: string) =>
  feature === 'oidc' ? config.oidc !== null : (config.features as string[]).includes(feature);

/**
 * Refuses to start with a feature off that accounts still rely on: with the second factor off,
 * its accounts would still be asked for a factor (the core checks it) that their owners could no
 * longer manage, and with passkeys off what their owners registered would be stranded. Says how
 * many, which, and which admin command clears them.
 */
async function refuseFeaturesInUse(sql: Sql, features: OptionalFeature[]): Promise<void> {
  const guarded = [
    {
      feature: 'second-factor',
      what: 'an active second factor',
      clear: 'admin remove-second-factor NAME --reason "…"',
      names: () => sql`
        SELECT a.name FROM second_factors f JOIN accounts a ON a.id = f.account_id WHERE f.activated_at IS NOT NULL`,
    },
    {
      feature: 'passkeys', what: 'a passkey', clear: 'admin reset NAME --reason "…" (which also resets the password)',
      names: () => sql`SELECT DISTINCT a.name FROM passkeys p JOIN accounts a ON a.id = p.account_id`,
    },
  ] as const;
  for (const { feature, what, clear, names: find } of guarded) {
    if ((features as string[]).includes(feature)) continue;
    const names = (await find()).map((row) => row.name as string);
    if (names.length === 0) continue;
    const some = names.slice(0, 5).join(', ') + (names.length > 5 ? ', …' : '');
    throw new ConfigError(
      `FEATURES leaves out ${feature}, but ${names.length} account(s) have ${what} (${some}). Clear each with ` +
        `\`${clear}\`, or put ${feature} back in FEATURES`,
    );
  }
}

/**
 * The first start after sql/017 moves the values sealed under TOKEN_SECRET to ENCRYPTION_KEYS
 * (reseal.ts); a start that stopped half-way is finished by the next.
 */
async function finishSealUpgrade(sql: Sql, sealer: Sealer, tokenSecrets: Buffer[], log: Logger): Promise<void> {
  if (!(await hasLegacySeals(sql))) return;
  const report = await resealAll(sql, sealer, tokenSecrets);
  const lost = Object.entries(report.unopenable);
  if ((report.unopenable.keyed_hash_keys ?? 0) > 0) {
    throw new Error(
      'values sealed before ENCRYPTION_KEYS open with no TOKEN_SECRET; start this version once with the ' +
        'TOKEN_SECRET the previous version ran with',
    );
  }
  log.info('sealed values moved from TOKEN_SECRET to ENCRYPTION_KEYS', { resealed: report.resealed });
  if (lost.length > 0) log.warn('sealed values that no TOKEN_SECRET opens were left as they were', report.unopenable);
}

function createTransport(config: ServiceConfig, log: Logger): MailTransport {
  if (config.smtpUrl === null) return createFileTransport(join(config.dataDir, 'mail'), log);
  return createSmtpTransport(config.smtpUrl);
}

/** Listens on `port` of `host` (0: any free port); returns the URL it answers on. */
async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
}

/** Stops accepting, lets requests in flight finish, then cuts whatever is still open after the grace. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections(), shutdownGraceMs);
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}
