// Runs every test file with node:test against one PostgreSQL: the one DATABASE_URL names, or
// an embedded one started here for the whole run. Each test file makes its own database in it.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../src/storage/embedded-db.ts';
import { createLogger } from '../src/log.ts';

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
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files.map((file) => relative(root, file))], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, TEST_ADMIN_DATABASE_URL: adminUrl },
});
const code = await new Promise<number>((resolve) => child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal === null ? 1 : 1))));
await embedded?.stop();
if (dataDir !== null) await rm(dataDir, { recursive: true, force: true });
process.exit(code);
