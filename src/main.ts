import { randomBytes } from 'node:crypto';
import { checkUsage, runCheckCommand } from './check/cli.ts';
import { commandNames, commandUsage, runCommand } from './commands.ts';
import { ConfigError, parseConfig, parseEncryptionKeys, settingNames, type Config } from './config/config.ts';
import { lockDataDir, prepareDataDir, type DataDirLock } from './storage/data-dir.ts';
import { isDatabaseUnavailable, poolerHint } from './storage/database-errors.ts';
import { connectDatabase, isUncaughtDriverDefect } from './storage/db.ts';
import { runningEmbeddedDatabase, startEmbeddedDatabase, type EmbeddedDatabase } from './storage/embedded-db.ts';
import { checkListenAddress } from './http/listen-check.ts';
import { loadOrCreateSecret } from './storage/local-secrets.ts';
import { createBufferedWriter, createLogger, describeError, type Logger } from './telemetry/log.ts';
import { loadMigrations, migrate } from './storage/migrations.ts';
import { mailUsage, runMailCommand } from './mail/preview.ts';
import { createMailRenderer, loadMailTemplates } from './mail/templates.ts';
import { startService, type ServiceConfig } from './service.ts';
import { parseOidcSettings } from './features/oidc/settings.ts';
import { unsupportedNode } from './support/runtime.ts';
import { version } from './support/version.ts';

const shutdownDeadlineMs = 10_000;
/** Log output, batched per event-loop turn; flushed before every exit. */
let output: ReturnType<typeof createBufferedWriter> | null = null;

function exit(code: number): never {
  output?.flush();
  process.exit(code);
}

const usage = `Usage: account-service [--migrate | --help | --version | COMMAND]

Serves the account API over HTTP. Configuration comes from environment variables only
(${wrap(settingNames.join(', '))}); see docs/configuration.md and
service.env.example. To read them from a file, after
npm run build: node --env-file=FILE dist/main.js.

  --migrate   apply the database migrations and exit
  --help      print this text and exit
  --version   print the version and exit

${commandUsage}${mailUsage}${checkUsage}`;

/** The origin the service answers on: an unspecified HOST is reached on loopback. */
function originOf(host: string, port: number): string {
  const reached = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reached.includes(':') ? `[${reached}]` : reached}:${port}`;
}

/** Breaks a list into lines of at most 100 characters. */
function wrap(list: string): string {
  return list.replace(/(.{1,100})(, |$)/g, (_, line: string, comma: string) => `${line}${comma.trim()}\n`).trimEnd();
}

function localRelyingParty(port: number): ServiceConfig['webauthn'] {
  return { id: 'localhost', name: 'account-service (development)', origins: [`http://localhost:${port}`] };
}

/** An ENCRYPTION_KEYS value of one random key, for the embedded mode. */
function newEncryptionKey(): string {
  return `local:${randomBytes(32).toString('base64')}`;
}

/** The only place with process-wide effects: environment, signals, exit codes. */
async function main(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    return;
  }
  if (argv.includes('--version')) {
    process.stdout.write(`${version}\n`);
    return;
  }
  const unsupported = unsupportedNode(process.versions.node);
  if (unsupported !== null) {
    process.stderr.write(`account-service: ${unsupported}\n`);
    process.exit(2);
  }
  // The deployment check needs no configuration and no database: it only calls the URL it is given.
  if (argv[0] === 'check') exit(await runCheckCommand(argv.slice(1)));
  // `mail preview` (and `admin mail preview`) reads templates and settings only, no database.
  const mail = argv[0] === 'mail' ? argv.slice(1) : argv[0] === 'admin' && argv[1] === 'mail' ? argv.slice(2) : null;
  const command = mail === null && commandNames.includes(argv[0] ?? '') ? argv : null;
  const unknown = command === null && mail === null ? argv.filter((arg) => arg !== '--migrate') : [];
  if (unknown.length > 0) {
    process.stderr.write(`account-service: unknown argument ${unknown[0]}\n${usage}`);
    process.exit(2);
  }
  let config: Config;
  let templates;
  try {
    const parsed = parseConfig(process.env);
    // Embedded (development) mode: the service's own origin is its issuer, so RFC 8414 discovery
    // answers as every documented client expects. Production names TOKEN_ISSUER.
    const ownOrigin = parsed.databaseUrl === null && !process.env.TOKEN_ISSUER && parsed.port !== 0;
    const tokenIssuer = ownOrigin ? originOf(parsed.host, parsed.port) : parsed.tokenIssuer;
    config = { ...parsed, tokenIssuer, oidc: parseOidcSettings(process.env, tokenIssuer) };
    // Refused here, in one line and before anything starts, like a bad variable.
    templates = loadMailTemplates(config.mailTemplatesDir);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`account-service: ${error.message}\n`);
    process.exit(2);
  }
  if (mail !== null) {
    const print = (text: string) => process.stdout.write(`${text}\n`);
    const fail = (line: string) => process.stderr.write(`account-service: ${line}\n`);
    exit(runMailCommand(mail, createMailRenderer(templates, config), print, fail));
  }
  // A command prints its result on stdout, and logs on stderr in words, for the operator who runs it.
  output = createBufferedWriter((chunk) => (command === null ? process.stdout : process.stderr).write(chunk));
  const log = createLogger(config.logLevel, output.write, command !== null);
  for (const warning of config.warnings) log.warn(warning);

  let embedded: EmbeddedDatabase | null = null;
  let lock: DataDirLock | null = null;
  try {
    // Everything that can be refused is checked before the database starts or migrations run.
    if (config.databaseUrl === null || config.smtpUrl === null) await prepareDataDir(config.dataDir);
    // A command beside a running `npm start` uses the database that instance started.
    const beside = config.databaseUrl === null && command !== null;
    const running = beside ? await runningEmbeddedDatabase(config.dataDir) : null;
    if (config.databaseUrl === null && running === null) lock = await lockDataDir(config.dataDir);
    if (!argv.includes('--migrate') && command === null) {
      await checkListenAddress(config.host, config.port);
      if (config.admin !== null) await checkListenAddress(config.admin.host, config.admin.port, 'ADMIN_');
    }
    if (config.databaseUrl === null && running === null) embedded = await startEmbeddedDatabase(config.dataDir, log);
    const settled: ServiceConfig = {
      ...config,
      databaseUrl: config.databaseUrl ?? running ?? embedded!.url,
      // Embedded (development) mode keeps generated keys in DATA_DIR; production must pass them.
      tokenSecrets: config.tokenSecrets ?? [Buffer.from(await loadOrCreateSecret(config.dataDir, 'token-secret'))],
      encryptionKeys: config.encryptionKeys
        ?? parseEncryptionKeys(await loadOrCreateSecret(config.dataDir, 'encryption-keys', newEncryptionKey), [])!,
      // Embedded (development) mode: passkeys work on the service's own origin without any setting.
      webauthn: config.webauthn ?? (config.databaseUrl === null ? localRelyingParty(config.port) : null),
    };
    if (command !== null) {
      const code = await runCommand(command, settled, log, (line) => process.stdout.write(`${line}\n`));
      await embedded?.stop();
      await lock?.release();
      exit(code);
    }
    if (argv.includes('--migrate')) {
      const sql = connectDatabase(settled.databaseUrl);
      const applied = await migrate(sql, await loadMigrations()).finally(() => sql.end());
      log.info('migrations applied', { applied });
      await embedded?.stop();
      await lock?.release();
      return;
    }
    const service = await startService({ config: settled, log });
    process.on('uncaughtException', (error) => {
      // Known defects of the postgres driver that no caller can catch (see db.ts): handed to the
      // pool, which replaces what is broken, instead of the process crashing. Anything else is
      // a bug: log it and exit.
      if (isUncaughtDriverDefect(error)) {
        service.noteDatabaseFailure(error);
        return;
      }
      log.error('uncaught exception', describeError(error));
      exit(1);
    });
    log.info('listening', {
      url: service.url,
      admin_url: service.adminUrl ?? undefined,
      database: embedded === null ? 'external' : 'embedded',
      mail: settled.smtpUrl === null ? 'files' : 'smtp',
    });
    onShutdownSignal(log, async () => {
      await service.stop();
      await embedded?.stop();
      await lock?.release();
    });
  } catch (error) {
    await embedded?.stop().catch(() => {});
    await lock?.release();
    throw config.databaseUrl === null ? error : withDatabaseHint(error);
  }
}

/**
 * A database that cannot be reached or entered at start-up is most often a wrong DATABASE_URL,
 * so the message names it. The URL itself is never printed: it may hold a password.
 */
function withDatabaseHint(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  // Connection failures, and PostgreSQL's classes 28 (authorization) and 3D (no such database).
  const cannotConnect = isDatabaseUnavailable(error) || (typeof code === 'string' && /^(28|3D)/.test(code));
  if (!cannotConnect) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new Error(
    `${message}. Check DATABASE_URL (postgres://user:password@host:port/database): the host and port, ` +
      'that PostgreSQL runs there, the user, the password and the database name',
  );
}

function onShutdownSignal(log: Logger, shutdown: () => Promise<void>): void {
  let stopping = false;
  const handle = (cause: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { cause });
    setTimeout(() => {
      log.error('shutdown took too long; exiting');
      exit(1);
    }, shutdownDeadlineMs).unref();
    shutdown().then(
      () => {
        log.info('stopped');
        exit(0);
      },
      (error: unknown) => {
        log.error('shutdown failed', describeError(error));
        exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
  // npm forwards SIGINT and SIGTERM to the script it runs, but an npm killed outright forwards
  // nothing: under npm the service stops once npm, its parent, is gone.
  if (process.env.npm_lifecycle_event !== undefined) {
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) handle('npm exited');
    }, 1_000).unref();
  }
}

main(process.argv.slice(2)).then(
  () => output?.flush(),
  (error: unknown) => {
    // A pooler that refuses what the service sends gets one line saying what to change.
    const message = poolerHint(error) ?? (error instanceof Error ? error.message : String(error));
    output?.flush();
    process.stderr.write(`account-service: ${message}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  },
);
