// What each path costs the database, the one part every instance shares: the round trips it
// sends (counted by test/e2e/round-trips.test.ts), the CPU time PostgreSQL spends per request,
// and the scale figure that follows, requests a second per PostgreSQL core. The CPU time is
// read from /proc: every process of the local PostgreSQL (the postmaster and its children,
// whose time the postmaster also collects when a backend exits, as the pool renewal makes
// them), before and after a run. Only a local PostgreSQL can be measured so.
import { readdir, readFile } from 'node:fs/promises';
import { roundTripBudgets } from '../helpers/round-trip-budgets.ts';
import { format, type Bench } from './bench.ts';
import { seedAccounts, seedPendingCodes, seedSessions } from './seed.ts';
import type { WrkRequest } from './wrk.ts';

const connections = 50;

type Path = { name: string; title: string; expected: number; requests(count: number): Promise<WrkRequest[]> | WrkRequest[] };

export async function databaseCost(bench: Bench): Promise<void> {
  const service = await bench.startService();
  try {
    const [backend] = await bench.sql`SELECT pg_backend_pid() AS pid`;
    const postmaster = await parentPid(backend!.pid as number);
    const json = { 'Content-Type': 'application/json' };
    const [reader] = await seedAccounts(bench.sql, 'cost-reader', 1, bench.passwordHash);
    const [session] = await seedSessions(bench.sql, [reader!.id]);
    const paths: Path[] = [
      {
        name: 'GET /acc/me',
        title: 'GET /acc/me (200)',
        expected: 200,
        requests: () => [{ method: 'GET', path: '/acc/me', headers: { Authorization: `Bearer ${bench.accessToken(reader!.publicId, session!.sessionId)}` } }],
      },
      {
        name: 'refresh',
        title: 'POST /auth/token refresh (200)',
        expected: 200,
        // One session per account, as clients are: refreshes of one account queue on its row.
        requests: async (count) => {
          const accounts = await seedAccounts(bench.sql, 'cost-refresh', count, bench.passwordHash);
          const sessions = await seedSessions(bench.sql, accounts.map((account) => account.id));
          return sessions.map(({ refreshToken }) => ({ method: 'POST', path: '/auth/token', headers: json, body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: refreshToken }) }));
        },
      },
      {
        name: 'activation',
        title: 'POST /acc/reg activation (204)',
        expected: 204,
        requests: async (count) => (await seedPendingCodes(bench.sql, count, bench.passwordHash)).map((code) => ({ method: 'POST', path: '/acc/reg', headers: json, body: JSON.stringify({ code }) })),
      },
    ];
    const lines = [
      '| Path | Round trips | req/s | PostgreSQL CPU per request (µs) | req/s per PostgreSQL core |',
      '|---|---:|---:|---:|---:|',
    ];
    const rates = new Map<string, number>();
    for (const path of paths) {
      process.stderr.write(`bench: database-cost ${path.name}…\n`);
      // Enough fresh requests for a generous rate; a path that uses them up reports `wrapped`.
      const requests = await path.requests(Math.max(1, Math.round(bench.seconds * 4000)));
      const plan = requests.length === 1 ? { request: requests[0]! } : { requests };
      const before = await databaseCpuSeconds(postmaster);
      const run = await bench.wrk({ url: service.url, connections, seconds: bench.seconds, ...plan });
      const spent = (await databaseCpuSeconds(postmaster)) - before;
      const served = run.requests - run.errorStatuses - run.socketErrors;
      rates.set(path.name, served / run.seconds);
      const doubt = run.errorStatuses + run.socketErrors > 0 || run.wrapped > 0 ? ` (${run.errorStatuses} error statuses, ${run.socketErrors} socket errors, wrapped ${run.wrapped})` : '';
      lines.push(`| ${path.title}${doubt} | ${roundTripBudgets[path.name]} | ${format(served / run.seconds, 0)} | ${format((spent / served) * 1e6, 0)} | ${format(served / spent, 0)} |`);
    }
    const ratio = rates.get('refresh')! / rates.get('GET /acc/me')!;
    lines.push('', `Refresh ÷ GET /acc/me in this run: ${format(ratio, 2)} (goal ≥ 0.35).`);
    bench.print(`Database cost per path: wrk -t1 -c${connections}, ${bench.seconds} s a run, PostgreSQL CPU from /proc`, lines);
  } finally {
    await service.stop();
  }
}

async function parentPid(pid: number): Promise<number> {
  return Number((await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/^.*\) /s, '').split(' ')[1]);
}

/** CPU seconds of the postmaster, of its children that have exited, and of the children alive now. */
async function databaseCpuSeconds(postmaster: number): Promise<number> {
  const fields = async (pid: number) => (await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/^.*\) /s, '').split(' ');
  const own = await fields(postmaster);
  // utime, stime, cutime, cstime are fields 14-17 of stat, 11-14 after the command name.
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const child = await fields(Number(entry)).catch(() => null);
    if (child !== null && Number(child[1]) === postmaster) ticks += Number(child[11]) + Number(child[12]);
  }
  return ticks / 100;
}
