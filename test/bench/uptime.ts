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
    const result = await runDecay({ url: service.url, pid: service.pid, token, ...(bench.quick ? { seconds: 20, windowSeconds: 5 } : {}) });
    bench.print('Decay: throughput over uptime', [formatDecay(result)]);
  } finally {
    await service.stop();
  }
}

/** PostgreSQL killed for 10 s under streaming load: the slowest answer, and the time to recover. */
export async function outage(bench: Bench): Promise<void> {
  bench.print('Outage: the database killed under load', [describeOutage(await runOutage())]);
}
