import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from './ports.ts';

export type PgBouncer = { url(database: string): string; stop(): Promise<void> };

/** The pgbouncer binary (Debian's package puts it in /usr/sbin, off a user's PATH), or null. */
export function findPgBouncer(): string | null {
  for (const candidate of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return null;
}

/**
 * PgBouncer in transaction mode in front of the server of `adminUrl`, set up as docs/operations.md
 * ("Poolers") says but for `prepare=false`: the service's startup parameters ignored, any
 * database passed through. As root it runs as the `postgres` user, which it requires.
 */
export async function startPgBouncer(binary: string, adminUrl: string): Promise<PgBouncer> {
  const server = new URL(adminUrl);
  const dir = await mkdtemp(join(tmpdir(), 'pgbouncer-'));
  await chmod(dir, 0o777);
  const port = await freePort();
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  await writeFile(join(dir, 'userlist.txt'), `"${user}" "${password}"\n`);
  await writeFile(join(dir, 'pgbouncer.ini'), `[databases]
* = host=${server.hostname} port=${server.port} user=${user}${password === '' ? '' : ` password=${password}`}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${join(dir, 'userlist.txt')}
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = statement_timeout,lock_timeout,idle_in_transaction_session_timeout
pidfile = ${join(dir, 'pgbouncer.pid')}
logfile = ${join(dir, 'pgbouncer.log')}
`);
  const asRoot = process.getuid?.() === 0;
  const [command, args] = asRoot
    ? ['runuser', ['-u', 'postgres', '--', binary, join(dir, 'pgbouncer.ini')]]
    : [binary, [join(dir, 'pgbouncer.ini')]];
  const child = spawn(command, args, { stdio: 'ignore' });
  // It writes its pid file once it listens.
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (await readFile(join(dir, 'pgbouncer.pid'), 'utf8').then(() => true, () => false)) break;
    if (child.exitCode !== null) throw new Error(`pgbouncer exited: ${await readFile(join(dir, 'pgbouncer.log'), 'utf8')}`);
    await delay(50);
  }
  return {
    url: (database) => `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      if (child.exitCode === null) {
        const pid = Number(await readFile(join(dir, 'pgbouncer.pid'), 'utf8').catch(() => '0'));
        if (pid > 0) process.kill(pid, 'SIGINT');
        else child.kill('SIGINT');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
