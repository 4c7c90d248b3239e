// The outage run of `npm run bench` (also runnable alone: node --import tsx test/bench/outage.ts):
// the compiled service under streaming load while its PostgreSQL is killed (SIGQUIT, as
// `pg_ctl -m immediate`) for 10 s. It reports the slowest answer during the outage (p100) and
// how long after the database's return the first success came. Its own PostgreSQL, so that no
// other run's database is touched.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { startEmbeddedDatabase } from '../../src/storage/embedded-db.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { imageCommand } from '../helpers/process.ts';
import { call } from '../helpers/http.ts';

export type OutageResult = { requests: number; duringOutage: number; statuses: Record<string, number>; slowestMs: number; recoveryMs: number };

const root = new URL('../..', import.meta.url).pathname;

export async function runOutage(outageSeconds = 10, clients = 20): Promise<OutageResult> {
  const work = await mkdtemp(join(tmpdir(), 'account-service-outage-'));
  await chmod(work, 0o755);
  const quiet = createLogger('error', () => {});
  let database = await startEmbeddedDatabase(work, quiet);
  const port = Number(new URL(database.url).port);
  const service = spawn(process.execPath, imageCommand(), {
    cwd: root,
    env: { PATH: process.env.PATH, DATABASE_URL: database.url, TOKEN_SECRET: randomBytes(32).toString('hex'), ENCRYPTION_KEYS: `bench:${randomBytes(32).toString('base64')}`, PORT: '0', RATE_LIMIT: '0', ACCOUNT_RATE_LIMIT: '0', DATA_DIR: work },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let seen = '';
      const read = (chunk: Buffer) => {
        seen += chunk.toString();
        const match = /"msg":"listening","url":"([^"]+)"/.exec(seen);
        if (match === null) return;
        // The request log is not needed: read on, and keep nothing.
        service.stdout!.off('data', read).resume();
        resolve(match[1]!);
      };
      service.stdout!.on('data', read);
      service.once('exit', () => reject(new Error(`the service exited: ${seen}`)));
    });
    const answers: Array<{ at: number; ms: number; status: number }> = [];
    let streaming = true;
    const stream = async () => {
      while (streaming) {
        const started = performance.now();
        const response = await call(url, 'POST', '/acc/reg', { json: { code: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' } }).catch(() => ({ status: 0 }));
        answers.push({ at: performance.now(), ms: performance.now() - started, status: response.status });
      }
    };
    const loops = Array.from({ length: clients }, stream);
    await delay(2_000);
    const postmaster = Number((await readFile(join(work, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(postmaster, 'SIGQUIT');
    const stoppedAt = performance.now();
    await delay(outageSeconds * 1000);
    database = await startEmbeddedDatabase(work, quiet, port);
    const backAt = performance.now();
    while (!answers.some((answer) => answer.at > backAt && answer.status === 404) && performance.now() - backAt < 30_000) {
      await delay(20);
    }
    streaming = false;
    await Promise.all(loops);
    const during = answers.filter((answer) => answer.at > stoppedAt && answer.at < backAt);
    const statuses: Record<string, number> = {};
    for (const answer of during) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    const recovered = answers.find((answer) => answer.at > backAt && answer.status === 404);
    return {
      requests: answers.length,
      duringOutage: during.length,
      statuses,
      slowestMs: Math.max(0, ...during.map((answer) => answer.ms)),
      recoveryMs: recovered === undefined ? Infinity : recovered.at - backAt,
    };
  } finally {
    service.kill('SIGTERM');
    await new Promise((resolve) => service.once('exit', resolve));
    await database.stop();
    await rm(work, { recursive: true, force: true });
  }
}

export function describeOutage(result: OutageResult, outageSeconds = 10): string {
  const shares = Object.entries(result.statuses).map(([status, count]) => `${count} × ${status}`).join(', ');
  return `Outage (PostgreSQL killed for ${outageSeconds} s under 20 streaming clients): ${result.duringOutage} answers during it (${shares}), the slowest in ${result.slowestMs.toFixed(0)} ms (goal < 1000); first success ${result.recoveryMs.toFixed(0)} ms after the database was back (goal < 1000).`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${describeOutage(await runOutage())}\n`);
}
