import { constants } from 'node:fs';
import { access, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../config/config.ts';

/** Holds DATA_DIR for this process until released. */
export type DataDirLock = { release(): Promise<void> };

const lockFile = 'service.pid';

/** Creates DATA_DIR if need be and checks that this process can write into it. */
export async function prepareDataDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    await access(dir, constants.W_OK | constants.X_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    let reason = code;
    if (code === 'ENOTDIR' || code === 'EEXIST') reason = 'a file is in the way';
    if (code === 'EACCES' || code === 'EPERM') reason = 'permission denied';
    const advice = 'set DATA_DIR to a directory this user may write';
    throw new ConfigError(`DATA_DIR ${dir} cannot be created or written (${reason}); ${advice}`);
  }
}

/**
 * Claims DATA_DIR for this service instance with a pid file, so that a second instance on the
 * same directory is told so before it touches the embedded database. A pid file whose process
 * is gone (a run that was killed) is taken over.
 */
export async function lockDataDir(dir: string): Promise<DataDirLock> {
  const path = join(dir, lockFile);
  const mine = `${process.pid}\n`;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      // `wx` fails if the file exists, so of two instances starting together one wins.
      await writeFile(path, mine, { flag: 'wx', mode: 0o644 });
      return {
        async release() {
          const current = await readFile(path, 'utf8').catch(() => null);
          if (current === mine) await unlink(path).catch(() => {});
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number((await readFile(path, 'utf8').catch(() => '')).trim());
    if (await isServiceProcess(holder)) throw instanceRunning(dir, holder);
    await unlink(path).catch(() => {});
  }
  throw instanceRunning(dir, null);
}

function instanceRunning(dir: string, pid: number | null): Error {
  const holder = pid === null ? 'another running instance' : `another running instance (process ${pid})`;
  return new Error(
    `${holder} uses DATA_DIR ${dir}. To run a second instance, give it a directory and a port of its own, ` +
      'e.g. DATA_DIR=.data-2 PORT=8081 npm start',
  );
}

/**
 * True when `pid` is a live process other than this one that may be the service. This process's
 * own pid is a leftover from an earlier life (a container restarts with the same pid), and on
 * Linux a pid that a reboot gave to a program other than Node.js is not taken for an instance.
 */
async function isServiceProcess(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isProcessRunning(pid)) return false;
  const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => null);
  return commandLine === null || /node/.test(commandLine);
}

export function isProcessRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
