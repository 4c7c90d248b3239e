// What every run of the bench shares: a PostgreSQL database, an SMTP sink, the compiled service
// and the references as child processes, wrk, and the report. run.ts opens it and hands it to
// each run; a run is `(bench: Bench) => Promise<void>` that prints its own section.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, watch } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { SMTPServer } from 'smtp-server';
import { createPasswordHasher } from '../../src/core/passwords.ts';
import { defaultScrypt } from '../../src/config/config.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { imageCommand } from '../helpers/process.ts';
import { createTokenService, hmacTokenKeys } from '../../src/core/tokens.ts';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src/storage/embedded-db.ts';
import { loadMigrations, migrate } from '../../src/storage/migrations.ts';
import type { Sql } from '../../src/storage/db.ts';
import type { CapturedReply, ReferencePlan } from './reference-server.ts';
import { hasWrk, runWrk, type WrkPlan, type WrkRequest, type WrkResult } from './wrk.ts';

export type RunningProcess = { url: string; pid: number; child: ChildProcess; stop(): Promise<void> };
export type RunningService = RunningProcess & { readyMs: number };

export type Bench = {
  quick: boolean;
  /** Seconds a timed wrk run lasts. */
  seconds: number;
  hashConcurrency: number;
  /** The secret the services sign tokens with. */
  secret: string;
  databaseUrl: string;
  /** A pool of the bench's own on the bench database, for seeding. */
  sql: Sql;
  /** An scrypt hash of `bench-password` at the production parameters, for seeded accounts. */
  passwordHash: string;
  /** An access token for the session, signed as the service signs them. */
  accessToken(publicId: string, sessionId: string): string;
  /** The compiled build, as the image runs it (its CMD), on the bench database, ready to serve. */
  startService(env?: Record<string, string>): Promise<RunningService>;
  startReference(plan: ReferencePlan): Promise<RunningProcess>;
  wrk(plan: WrkPlan): Promise<WrkResult>;
  /** One request to `url`, and the response as the service sent it, for a reference to send the same bytes. */
  capture(url: string, sample: WrkRequest): Promise<CapturedReply>;
  /** Facts one run measures and a later one uses (the raw scrypt rate for the overload run). */
  facts: Map<string, number>;
  /** Prints a section of the report: a heading and its lines. */
  print(heading: string, lines: string[]): void;
  /** Runs `run` if `--only` selects `name` (or there is no `--only`); prints what it threw and goes on. */
  run(name: string, run: (bench: Bench) => Promise<void>): Promise<void>;
  close(): Promise<void>;
};

const root = new URL('../..', import.meta.url).pathname;

export async function openBench(argv: string[]): Promise<Bench> {
  if (!(await hasWrk())) {
    process.stderr.write('The bench drives load with wrk, which is not installed: apt-get install wrk (Debian package `wrk`).\n');
    process.exit(2);
  }
  const quick = argv.includes('--quick');
  const only = argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length).split(',');
  const work = await mkdtemp(join(tmpdir(), 'account-service-bench-'));
  // As root, the embedded PostgreSQL runs as the `postgres` user, which must be able to enter this directory.
  await chmod(work, 0o755);
  const quiet = createLogger('error', () => {});

  let embedded: EmbeddedDatabase | null = null;
  let adminUrl = process.env.DATABASE_URL ?? '';
  if (adminUrl === '') {
    embedded = await startEmbeddedDatabase(work, quiet);
    adminUrl = embedded.url;
  }
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const benchDatabase = `bench_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${benchDatabase}`);
  const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${benchDatabase}` }).toString();
  const sql = postgres(databaseUrl, { max: 10, onnotice: () => {} });
  // Migrated here, not by the first service: a run may seed rows before it starts one (enumeration does).
  await migrate(sql, await loadMigrations());
  const smtp = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], logger: false, onData: (stream, _s, done) => (stream.resume(), stream.on('end', () => done())) });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as { port: number }).port}`;

  const secret = randomBytes(32).toString('base64url');
  // One for the whole run: every service of the run shares the database, whose keyed-hash keys it seals.
  const encryptionKeys = `bench:${randomBytes(32).toString('base64')}`;
  const hashConcurrency = 4;
  const tokens = createTokenService({ keys: hmacTokenKeys([Buffer.from(secret)]), ttlSeconds: 3600, issuer: 'account-service', audience: null });
  const children = new Set<ChildProcess>();
  let logCounter = 0;

  const bench: Bench = {
    quick,
    seconds: quick ? 2 : 10,
    hashConcurrency,
    secret,
    databaseUrl,
    sql,
    passwordHash: await createPasswordHasher(defaultScrypt).hash('bench-password'),
    accessToken: (publicId, sessionId) => tokens.issueToken(publicId, sessionId, new Date()).token,
    facts: new Map(),

    async startService(env = {}) {
      // The service logs a line a request, straight into a file of the work directory: a pipe
      // would make the bench's own process read every line, on the cores it measures.
      const logFile = join(work, `service-${(logCounter += 1)}.log`);
      const log = openSync(logFile, 'w');
      const started = performance.now();
      // The compiled build, as production runs it (npm run bench builds first).
      const child = spawn(process.execPath, imageCommand(), {
        cwd: root,
        env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, TOKEN_SECRET: secret, ENCRYPTION_KEYS: encryptionKeys, SMTP_URL: smtpUrl, PORT: '0', RATE_LIMIT: '0', ACCOUNT_RATE_LIMIT: '0', HASH_CONCURRENCY: String(hashConcurrency), ...env },
        stdio: ['ignore', log, 'inherit'],
      });
      closeSync(log);
      const url = await new Promise<string>((resolve, reject) => {
        const check = () => {
          const match = /"msg":"listening","url":"([^"]+)"/.exec(readFileSync(logFile, 'utf8'));
          if (match === null) return;
          watcher.close();
          child.off('exit', exited);
          resolve(match[1]!);
        };
        // Told of every write to the file, so that the time to ready is not rounded up to a polling interval.
        const watcher = watch(logFile, check);
        const exited = (code: number | null) => {
          watcher.close();
          reject(new Error(`the service exited (${code}) before it listened:\n${readFileSync(logFile, 'utf8')}`));
        };
        child.once('exit', exited);
        check();
      });
      const readyMs = performance.now() - started;
      return { url, readyMs, ...track(child) };
    },

    async startReference(plan) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test/bench/reference-server.ts'), JSON.stringify(plan)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
      const port = await new Promise<number>((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()).port as number)));
      return { url: `http://127.0.0.1:${port}`, ...track(child) };
    },

    wrk: (plan) => runWrk(plan, work),

    capture(url, sample) {
      return new Promise((resolve, reject) => {
        const headers = { ...sample.headers, ...(sample.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(sample.body)) }) };
        const req = request(new URL(sample.path, url), { method: sample.method, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            // node:http writes these itself, the same way in the service and the reference.
            const added = new Set(['date', 'connection', 'keep-alive']);
            const headerList: string[] = [];
            for (let index = 0; index < res.rawHeaders.length; index += 2) {
              const name = res.rawHeaders[index]!;
              if (!added.has(name.toLowerCase())) headerList.push(name, res.rawHeaders[index + 1]!);
            }
            resolve({ status: res.statusCode!, headers: headerList, body: Buffer.concat(chunks).toString() });
          });
        });
        req.on('error', reject);
        req.end(sample.body);
      });
    },

    print(heading, lines) {
      process.stdout.write(`\n### ${heading}\n\n${lines.join('\n')}\n`);
    },

    async run(name, run) {
      if (only !== undefined && !only.includes(name)) return;
      process.stderr.write(`bench: ${name}…\n`);
      try {
        await run(bench);
      } catch (error) {
        bench.print(name, [`FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`]);
      }
    },

    async close() {
      for (const child of children) child.kill('SIGTERM');
      await sql.end();
      smtp.close();
      await admin.unsafe(`DROP DATABASE ${benchDatabase} WITH (FORCE)`);
      await admin.end();
      await embedded?.stop();
      await rm(work, { recursive: true, force: true });
    },
  };
  return bench;

  function track(child: ChildProcess): { pid: number; child: ChildProcess; stop(): Promise<void> } {
    children.add(child);
    child.once('exit', () => children.delete(child));
    return {
      pid: child.pid!,
      child,
      async stop() {
        if (child.exitCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      },
    };
  }
}

/** Resident memory of a process now (VmRSS) or at its peak (VmHWM), in MiB. */
export async function residentMiB(pid: number, which: 'VmRSS' | 'VmHWM' = 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${which}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
}

/** CPU time a process has used so far (user and system), in seconds; Linux counts it in ticks of 1/100 s. */
export async function cpuSeconds(pid: number): Promise<number> {
  // The command name, in parentheses, may hold spaces: the fields after it are counted from its end.
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/^.*\) /s, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const format = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : '-');
