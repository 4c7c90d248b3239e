import { freePort } from './ports.ts';
import { execFile } from 'node:child_process';
import { access, chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const pgBin = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** True when this machine has the PostgreSQL binaries the failover test needs. */
export async function hasPostgresBinaries(): Promise<boolean> {
  return access(join(pgBin, 'pg_basebackup')).then(() => true, () => false);
}

/** PostgreSQL refuses to run as root: as root, every binary runs as the postgres user. */
async function pg(binary: string, args: string[]): Promise<string> {
  const asRoot = userInfo().uid === 0;
  const [command, prefix] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(pgBin, binary)]] : [join(pgBin, binary), []];
  const { stdout } = await run(command, [...prefix, ...args], { timeout: 60_000 });
  return stdout;
}

export type Server = { port: number; dataDir: string; stop(mode?: 'fast' | 'immediate'): Promise<void>; promote(): Promise<void> };

/**
 * A primary and a synchronous standby made with pg_basebackup -R, in a temp directory: every
 * commit the primary acknowledges is on the standby too, as a managed PostgreSQL's failover pair.
 */
export async function startPrimaryAndStandby(): Promise<{ primary: Server; standby: Server; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'account-service-failover-'));
  await chmod(dir, 0o755);
  if (userInfo().uid === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout), Number(gid));
  }
  const server = (dataDir: string, serverPort: number, settings: string): Server => {
    const start = () => pg('pg_ctl', ['-D', dataDir, '-o', `-p ${serverPort} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} ${settings}`, '-l', `${dataDir}.log`, '-w', 'start']);
    return {
      port: serverPort,
      dataDir,
      stop: async (mode = 'fast') => void (await pg('pg_ctl', ['-D', dataDir, '-m', mode, '-w', 'stop']).catch(() => '')),
      promote: async () => void (await pg('pg_ctl', ['-D', dataDir, '-w', 'promote'])),
      ...{ start },
    } as Server & { start: () => Promise<string> };
  };
  const [port, standbyPort] = [await freePort(), await freePort()];
  await pg('initdb', ['-D', join(dir, 'primary'), '-U', 'postgres', '--auth=trust']);
  const primary = server(join(dir, 'primary'), port, "-c synchronous_standby_names='*'") as Server & { start: () => Promise<string> };
  await primary.start();
  await pg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-D', join(dir, 'standby'), '-R', '-X', 'stream']);
  // Promoted, the standby is alone: it must not wait for a standby of its own.
  const standby = server(join(dir, 'standby'), standbyPort, "-c synchronous_standby_names=''") as Server & { start: () => Promise<string> };
  await standby.start();
  return {
    primary,
    standby,
    async remove() {
      await primary.stop('immediate');
      await standby.stop('immediate');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
