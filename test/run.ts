// Runs every test file with node:test against one PostgreSQL: the one DATABASE_URL names, or
// an embedded one started here for the whole run. Each test file makes its own database in it.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../src/storage/embedded-db.ts';
import { createLogger } from '../src/telemetry/log.ts';

const root = new URL('..', import.meta.url).pathname;

async function findTests(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return findTests(path);
      return Promise.resolve(entry.name.endsWith('.test.ts') ? [path] : []);
    }),
  );
  return nested.flat().sort();
}

// Interrupted (Ctrl-C, or a supervisor's SIGTERM): the test processes get the signal too, and
// this process then ends as it does after a run, stopping the database and removing its files.
let interrupted = false;
let child: ChildProcess | null = null;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted = true;
    child?.kill(signal);
  });
}

let embedded: EmbeddedDatabase | null = null;
let dataDir: string | null = null;
let adminUrl = process.env.DATABASE_URL;
if (adminUrl === undefined || adminUrl === '') {
  dataDir = await mkdtemp(join(tmpdir(), 'account-service-test-'));
  // As root, PostgreSQL runs as the `postgres` user, which must be able to enter this directory.
  await chmod(dataDir, 0o755);
  embedded = await startEmbeddedDatabase(dataDir, createLogger('warn', (line) => process.stderr.write(line)));
  adminUrl = embedded.url;
}

const filter = process.argv.slice(2);
const files = (await findTests(join(root, 'test'))).filter((file) => filter.length === 0 || filter.some((part) => file.includes(part)));
// Bounds, so that a test that hangs fails instead of holding CI until its own limit:
// - --test-timeout fails what runs longer than `testTimeoutMs` (a test on Node 24, a whole file
//   on Node 22);
// - a file held open after its last test ends a minute later, with its verdict
//   (helpers/linger-guard.ts);
// - and the whole run is stopped after `suiteTimeoutMs` (a leaked server or timer once held CI
//   for 88 minutes).
// Not --test-force-exit: under load it ended a file's process before the runner had its last
// results, which were then left out of the count with the run still passing (621 of 624 tests
// once, the last suite of config.test.ts; nodejs/node#54327): a test that cannot fail.
// Two whole runs side by side on a two-core machine took about 11 minutes each; CI makes three
// runs (one of the end-to-end files only) in its 90 minutes.
const testTimeoutMs = 10 * 60_000;
const suiteTimeoutMs = 25 * 60_000;
const args = ['--import', 'tsx', '--import', './test/helpers/linger-guard.ts', '--test', '--test-concurrency=2', `--test-timeout=${testTimeoutMs}`];
// The spec reporter as before, and a line on stderr as each file ends (progress-reporter.ts).
const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./test/progress-reporter.ts', '--test-reporter-destination=stderr'];
/** Runs the files; the exit code of node --test, or null when interrupted before it started. */
function runFiles(): Promise<number> | null {
  if (interrupted) return null;
  const running = spawn(process.execPath, [...args, ...reporters, ...files.map((file) => relative(root, file))], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, TEST_ADMIN_DATABASE_URL: adminUrl, TEST_FILE_COUNT: String(files.length) },
  });
  child = running;
  // SIGTERM: the test runner then reports the tests still running and ends the files' processes.
  const watchdog = setTimeout(() => {
    process.stderr.write(`test/run.ts: the suite ran for ${suiteTimeoutMs / 60_000} minutes; stopping it\n`);
    running.kill('SIGTERM');
    setTimeout(() => running.kill('SIGKILL'), 30_000).unref();
  }, suiteTimeoutMs);
  return new Promise((resolve) => running.on('exit', (exitCode) => (clearTimeout(watchdog), resolve(exitCode ?? 1))));
}

const code = await runFiles();
await embedded?.stop();
if (dataDir !== null) await rm(dataDir, { recursive: true, force: true });
process.exit(interrupted ? 130 : code!);
