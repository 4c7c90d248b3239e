// test/run.ts itself: the progress it prints, and what an interrupted run leaves behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { waitUntil } from './helpers/wait.ts';

const root = new URL('..', import.meta.url).pathname;

/** A temporary directory that PostgreSQL, run as its own user under root, may enter. */
async function temporary(prefix: string): Promise<string> {
  const temp = await mkdtemp(join(tmpdir(), prefix));
  await chmod(temp, 0o755);
  return temp;
}

/** The runner on one test file, with an embedded PostgreSQL in a temporary directory of its own. */
function runner(temp: string) {
  // Not a subtest of this file: node:test marks its child processes with NODE_TEST_CONTEXT.
  const { DATABASE_URL: _external, NODE_TEST_CONTEXT: _context, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/run.ts', 'test/runtime.test.ts'], {
    cwd: root,
    env: { ...env, TMPDIR: temp, NODE_V8_COVERAGE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.resume();
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exit, stderr: () => stderr };
}

describe('test/run.ts', () => {
  it('prints a line as each file ends, with its number of the total', async () => {
    const temp = await temporary('runner-progress-');
    try {
      const run = runner(temp);
      assert.equal(await run.exit, 0, run.stderr());
      assert.match(run.stderr(), /^file 1 of 1 done: test\/runtime\.test\.ts \(ok\)$/m);
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  });

  it('removes its database files when interrupted', async () => {
    const temp = await temporary('runner-interrupted-');
    try {
      const run = runner(temp);
      // Interrupted once its database is up: the data directory holds a running PostgreSQL.
      await waitUntil(async () => (await readdir(temp, { recursive: true })).some((path) => path.endsWith('postmaster.pid')), 60_000);
      run.child.kill('SIGINT');
      assert.equal(await run.exit, 130);
      // tsx keeps its compile cache there too (tsx-0); the run's own directory must be gone.
      assert.deepEqual((await readdir(temp)).filter((name) => name.startsWith('account-service-test-')), [], 'no database left behind');
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  });
});
