// The bench's two runs about staying up: throughput over uptime (decay.ts, the driver's queue
// defect) and a database outage under load (outage.ts). Each wraps a self-contained module
// into a run of run.ts.
import type { Bench } from './bench.ts';
import { formatDecay, runDecay } from './decay.ts';
import { describeOutage, runOutage } from './outage.ts';
import { seedAccounts, seedSessions } from './seed.ts';

/** GET /acc/me at 50 connections for 60 s on a fresh process: the rate of the first and last 10 s, and memory. */
export async function decay(bench: Bench): Promise<void> {
  const service = await bench.startService();
  try {
    const [account] = await seedAccounts(bench.sql, 'decay', 1, bench.passwordHash);
    const [session] = await seedSessions(bench.sql, [account!.id]);
    const token = bench.accessToken(account!.publicId, session!.sessionId);
    // Every backend of the service seen once a second: those that were not there at the start were opened during the run.
    const backends = async () => (await bench.sql`
      SELECT pid, backend_start FROM pg_stat_activity WHERE application_name LIKE 'account-service/%'`)
      .map((row) => `${row.pid}@${(row.backend_start as Date).toISOString()}`);
    const atStart = new Set(await backends());
    const seen = new Set<string>();
    const sampler = setInterval(() => void backends().then((keys) => keys.forEach((key) => seen.add(key))), 1000);
    const started = performance.now();
    const result = await runDecay({ url: service.url, pid: service.pid, token, ...(bench.quick ? { seconds: 20, windowSeconds: 5 } : {}) })
      .finally(() => clearInterval(sampler));
    const opened = [...seen].filter((key) => !atStart.has(key)).length;
    const minutes = (performance.now() - started) / 60_000;
    bench.print('Decay: throughput over uptime', [
      formatDecay(result),
      `Connections the service opened during the run: ${opened} (${(opened / minutes).toFixed(1)} a minute, filling the pool included; ${atStart.size} open at the start).`,
    ]);
  } finally {
    await service.stop();
  }
}

/** PostgreSQL killed for 10 s under streaming load: the slowest answer, and the time to recover. */
export async function outage(bench: Bench): Promise<void> {
  bench.print('Outage: the database killed under load', [describeOutage(await runOutage())]);
}
