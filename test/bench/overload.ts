// Registrations offered at ten times the hashing capacity (the raw scrypt rate), open loop, to a
// fresh process, whose peak resident memory is then this run's alone.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { format, percentile, residentMiB, type Bench } from './bench.ts';
import type { OpenLoopPlan, OpenLoopResult } from './open-loop.ts';

/** Raw scrypt at ln=15,r=8,p=3 on two cores, for when the hashing run did not measure it. */
const assumedScryptRps = 9;

export async function overload(bench: Bench): Promise<void> {
  const scryptRps = bench.facts.get('rawScryptRps');
  const rate = Math.ceil(10 * (scryptRps ?? assumedScryptRps));
  const service = await bench.startService();
  try {
    const plan: OpenLoopPlan = { url: service.url, namePrefix: 'flood', ratePerSecond: rate, seconds: bench.seconds };
    const generator = new URL('open-loop.ts', import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', generator, JSON.stringify(plan)], { cwd: join(generator, '../../..'), maxBuffer: 1 << 26 });
    const result = JSON.parse(stdout) as OpenLoopResult;
    const peak = await residentMiB(service.pid, 'VmHWM');
    const served = result.latenciesMs['204'] ?? [];
    const shed = result.statuses['503'] ?? 0;
    const others = Object.entries(result.statuses).filter(([status]) => status !== '204' && status !== '503');
    const bound = bench.hashConcurrency * 32 + 150;
    bench.print(`Overload: registrations offered at ${rate}/s for ${bench.seconds} s, ten times the raw scrypt rate${scryptRps === undefined ? ` (assumed ${assumedScryptRps}/s: the hashing run did not run)` : ''}`, [
      `- ${result.requests} requests: ${served.length} served (204), ${format((100 * shed) / result.requests)} % refused at once (503)${others.length > 0 ? `, also ${others.map(([status, count]) => `${count}×${status}`).join(', ')}` : ''}.`,
      `- Served: p50 ${format(percentile(served, 50))} ms, p99 ${format(percentile(served, 99))} ms, max ${format(Math.max(...served, 0))} ms.`,
      `- Peak resident memory (VmHWM) ${format(peak, 0)} MiB; bound HASH_CONCURRENCY × 32 + 150 = ${bound} MiB: ${peak <= bound ? 'within' : 'OVER'}.`,
    ]);
  } finally {
    await service.stop();
  }
}
