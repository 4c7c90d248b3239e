// Many accounts at the session cap: SESSIONS_PER_ACCOUNT (100) sessions on each of ACCOUNTS
// accounts, every account's list read over and over at 50 connections, and sign-ins on accounts
// at the cap (each ends the least recently used session). Resident memory must stay within the
// bound docs/performance.md states: HASH_CONCURRENCY × 32 MiB + 150 MiB.
import { format, residentMiB, type Bench } from './bench.ts';
import { seedAccounts, seedSessions } from './seed.ts';
import type { WrkRequest } from './wrk.ts';

const sessionsPerAccount = 100;

export async function sessionsMemory(bench: Bench): Promise<void> {
  const accountCount = bench.quick ? 100 : 1_000;
  const accounts = await seedAccounts(bench.sql, 'capped', accountCount, bench.passwordHash);
  const sessions = await seedSessions(bench.sql, accounts.flatMap((account) => Array<string>(sessionsPerAccount).fill(account.id)));
  const service = await bench.startService({ SESSIONS_PER_ACCOUNT: String(sessionsPerAccount) });
  try {
    const requests: WrkRequest[] = accounts.map((account, index) => ({
      method: 'GET',
      path: '/acc/me/sessions',
      headers: { Authorization: `Bearer ${bench.accessToken(account.publicId, sessions[index * sessionsPerAccount]!.sessionId)}` },
    }));
    const listing = await fetch(new URL('/acc/me/sessions', service.url), { headers: requests[0]!.headers });
    const listed = ((await listing.json()) as { sessions: unknown[] }).sessions.length;
    const listingBytes = Number(listing.headers.get('content-length'));
    const load = bench.wrk({ url: service.url, connections: 50, seconds: bench.seconds * 2, requests });
    // Sign-ins at the cap while the lists are read: each starts a session and ends the oldest.
    const signIns = bench.quick ? 10 : 50;
    for (let index = 0; index < signIns; index += 1) {
      const response = await fetch(new URL('/auth/token', service.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'password', username: accounts[index % accountCount]!.name, password: 'bench-password' }),
      });
      await response.arrayBuffer();
    }
    const result = await load;
    const [most] = await bench.sql`SELECT max(n)::int AS n FROM (SELECT count(*) AS n FROM sessions GROUP BY account_id) AS per_account`;
    const peak = await residentMiB(service.pid, 'VmHWM');
    const bound = bench.hashConcurrency * 32 + 150;
    bench.print(`Sessions at the cap: ${sessionsPerAccount} sessions on each of ${accountCount} accounts`, [
      `- One account's list: ${listed} sessions, ${format(listingBytes / 1024)} KiB. Lists read at 50 connections for ${bench.seconds * 2} s: ${format(result.rps, 0)} req/s, p99 ${format(result.p99Ms)} ms, ${result.errorStatuses} error statuses.`,
      `- ${signIns} sign-ins on accounts at the cap meanwhile; most sessions on one account afterwards: ${most!.n} (cap ${sessionsPerAccount}: ${most!.n <= sessionsPerAccount ? 'held' : 'EXCEEDED'}).`,
      `- Peak resident memory (VmHWM) ${format(peak, 0)} MiB; bound HASH_CONCURRENCY × 32 + 150 = ${bound} MiB: ${peak <= bound ? 'within' : 'OVER'}.`,
    ]);
  } finally {
    await service.stop();
  }
}
