import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError } from '../../src/config/config.ts';
import { lockDataDir, prepareDataDir } from '../../src/storage/data-dir.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'data-dir-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A live process running `command`, for a pid file to name. */
async function startProcess(command: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: 'ignore' });
  await new Promise((resolve) => child.once('spawn', resolve));
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe('prepareDataDir', () => {
  it('creates the directory with its parents', async () => {
    await prepareDataDir(join(dir, 'a', 'b'));
    assert.ok(existsSync(join(dir, 'a', 'b')));
  });

  it('refuses a path under a file with one line naming DATA_DIR', async () => {
    await writeFile(join(dir, 'file'), 'in the way');
    await assert.rejects(prepareDataDir(join(dir, 'file', 'data')), (error: Error) => error instanceof ConfigError && /^DATA_DIR \S+ cannot be created or written \(a file is in the way\)/.test(error.message));
    await assert.rejects(prepareDataDir(join(dir, 'file')), /^ConfigError: DATA_DIR .*a file is in the way/);
  });
});

describe('lockDataDir', () => {
  it('holds the directory with this process id and lets go on release', async () => {
    const lockDir = await mkdtemp(join(dir, 'lock-'));
    const lock = await lockDataDir(lockDir);
    assert.equal(await readFile(join(lockDir, 'service.pid'), 'utf8'), `${process.pid}\n`);
    await lock.release();
    assert.equal(existsSync(join(lockDir, 'service.pid')), false);
  });

  it('refuses while another live instance holds it, and takes it over once that process is gone', async () => {
    const lockDir = await mkdtemp(join(dir, 'lock-'));
    const other = await startProcess(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
    await writeFile(join(lockDir, 'service.pid'), `${other.pid}\n`);
    await assert.rejects(lockDataDir(lockDir), new RegExp(`^Error: another running instance \\(process ${other.pid}\\) uses DATA_DIR ${lockDir}\\. To run a second instance, .*DATA_DIR=.* PORT=`));
    await stopProcess(other);
    const lock = await lockDataDir(lockDir);
    assert.equal(await readFile(join(lockDir, 'service.pid'), 'utf8'), `${process.pid}\n`, 'the stale pid file was taken over');
    await lock.release();
  });

  it('takes over a pid file that names this very process (a restarted container) or garbage', async () => {
    const lockDir = await mkdtemp(join(dir, 'lock-'));
    for (const content of [`${process.pid}\n`, 'not a pid\n', '']) {
      await writeFile(join(lockDir, 'service.pid'), content);
      const lock = await lockDataDir(lockDir);
      assert.equal(await readFile(join(lockDir, 'service.pid'), 'utf8'), `${process.pid}\n`, `taken over from ${JSON.stringify(content)}`);
      await lock.release();
      // Released as its own: a leftover that the lock had only tolerated would still be there.
      assert.equal(existsSync(join(lockDir, 'service.pid')), false, `released after ${JSON.stringify(content)}`);
    }
  });

  it('does not take a pid that a reboot gave to another program for an instance', { skip: !existsSync('/proc/self/cmdline') }, async () => {
    const lockDir = await mkdtemp(join(dir, 'lock-'));
    const sleeper = await startProcess('sleep', ['60']);
    await writeFile(join(lockDir, 'service.pid'), `${sleeper.pid}\n`);
    try {
      // The pid is alive, so only its command line (not Node.js) tells it is no instance.
      assert.equal(sleeper.exitCode === null && sleeper.signalCode === null, true, 'the other program runs');
      const lock = await lockDataDir(lockDir);
      assert.equal(await readFile(join(lockDir, 'service.pid'), 'utf8'), `${process.pid}\n`, 'the pid file now names this process');
      await lock.release();
      assert.equal(existsSync(join(lockDir, 'service.pid')), false);
    } finally {
      await stopProcess(sleeper);
    }
  });

  it('releases only its own pid file', async () => {
    const lockDir = await mkdtemp(join(dir, 'lock-'));
    const lock = await lockDataDir(lockDir);
    await writeFile(join(lockDir, 'service.pid'), '1\n');
    await lock.release();
    assert.equal(await readFile(join(lockDir, 'service.pid'), 'utf8'), '1\n');
  });
});
