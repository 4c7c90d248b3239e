// Footprint in a small container: time from process start to ready (on an external database, the
// bench's), resident memory at idle next to bare node, and resident memory after each 100,000
// requests, to show that nothing grows. The first block is a warm-up: V8 sizes its heap and
// compiles the hot paths then, and resident memory moves by a few MiB in steps while it does.
// Growth is what the blocks after it add: a leak of even 50 bytes a request adds 5 MiB a block.
import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { format, median, residentMiB, type Bench, type RunningService } from './bench.ts';
import { seedAccounts, seedSessions } from './seed.ts';
import type { WrkRequest } from './wrk.ts';

const readyGoalMs = 250;
const idleGoalOverBareMiB = 20;
/** Resident memory may move by this much between blocks of requests without counting as growth. */
const growthToleranceMiB = 5;
const blockRequests = 100_000;
const settleMs = 2_000;

/** The smallest node:http server: what any Node service costs before its own code. */
const bareServer = `require('node:http').createServer((req, res) => res.end()).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;

export async function footprint(bench: Bench): Promise<void> {
  const starts = bench.quick ? 3 : 5;
  const readyMs: number[] = [];
  for (let start = 0; start < starts; start += 1) {
    const service = await bench.startService();
    readyMs.push(service.readyMs);
    await service.stop();
  }
  const bare = await startBareNode(starts);

  const [account] = await seedAccounts(bench.sql, 'footprint', 1, bench.passwordHash);
  const [session] = await seedSessions(bench.sql, [account!.id]);
  // Mail that earlier runs left queued would go out at start-up and load the mailer with it
  // (transport.ts loads it with the first message): idle is read before any mail, then after one.
  await bench.sql`DELETE FROM outbox WHERE state = 'pending'`;
  const service = await bench.startService();
  try {
    await delay(settleMs);
    const idle = await residentMiB(service.pid);
    await fetch(new URL('/acc/pwd/code', service.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `${account!.name}@bench.example` }) });
    while ((await bench.sql`SELECT count(*)::int AS n FROM outbox WHERE state = 'pending'`)[0]!.n > 0) await delay(100);
    await delay(settleMs);
    const idleAfterMail = await residentMiB(service.pid);
    const blocks = await residentAfterBlocks(bench, service, bench.accessToken(account!.publicId, session!.sessionId), bench.quick ? 3 : 6);
    const readyMedian = median(readyMs);
    // From the highest reading of the block after the warm-up to the highest of the last two:
    // a heap that has reached its size moves up and down around it; a leak keeps climbing.
    const afterWarmUp = blocks[1]!.miB;
    const growth = Math.max(...blocks.slice(-2).map((block) => block.miB)) - afterWarmUp;
    const overBare = (miB: number) => `${format(miB)} MiB (bare + ${format(miB - bare.idleMiB)}: ${miB - bare.idleMiB < idleGoalOverBareMiB ? 'met' : 'MISSED'})`;
    bench.print('Footprint: start-up and resident memory', [
      `- Ready (process start to the "listening" line, external database, median of ${starts}): ${format(readyMedian, 0)} ms (${readyMs.map((ms) => format(ms, 0)).join(', ')}); bare node:http ${format(bare.readyMs, 0)} ms. Goal < ${readyGoalMs} ms: ${readyMedian < readyGoalMs ? 'met' : 'MISSED'}.`,
      `- Idle resident memory (VmRSS, ${settleMs / 1000} s after ready), goal < bare node:http + ${idleGoalOverBareMiB} MiB, bare node:http ${format(bare.idleMiB)} MiB: before any mail ${overBare(idle)}; after one message sent ${overBare(idleAfterMail)}.`,
      `- Resident memory after ${blocks.map((block) => `${format(block.requests / 1000, 0)}k requests: ${format(block.miB)} MiB`).join('; ')} (a mix of 400, 404, GET /acc/me, refused refresh, /healthz, unknown path). After the warm-up block, to the highest of the last two: ${growth >= 0 ? '+' : ''}${format(growth)} MiB over ${format((blocks[blocks.length - 1]!.requests - blocks[1]!.requests) / 1000, 0)}k requests (tolerance ${growthToleranceMiB} MiB): ${growth <= growthToleranceMiB ? 'no growth' : 'GROWS'}.`,
    ]);
  } finally {
    await service.stop();
  }
}

/** Median time to listen and idle resident memory of the bare server, started `starts` times. */
async function startBareNode(starts: number): Promise<{ readyMs: number; idleMiB: number }> {
  const readyMs: number[] = [];
  let idleMiB = NaN;
  for (let start = 0; start < starts; start += 1) {
    const started = performance.now();
    const child = spawn(process.execPath, ['-e', bareServer], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve) => child.stdout.once('data', resolve));
    readyMs.push(performance.now() - started);
    if (start === starts - 1) {
      await delay(settleMs);
      idleMiB = await residentMiB(child.pid!);
    }
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  return { readyMs: median(readyMs), idleMiB };
}

/** Drives a mix of requests in blocks of 100,000 and reads resident memory after each. */
async function residentAfterBlocks(bench: Bench, service: RunningService, accessToken: string, blocks: number): Promise<Array<{ requests: number; miB: number }>> {
  const json = { 'Content-Type': 'application/json' };
  const mix: WrkRequest[] = [
    { method: 'POST', path: '/acc/reg/code', headers: json, body: JSON.stringify({ name: 'NOT VALID', email: 'nope', pwd: 1 }) },
    { method: 'POST', path: '/acc/reg', headers: json, body: JSON.stringify({ code: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' }) },
    { method: 'GET', path: '/acc/me', headers: { Authorization: `Bearer ${accessToken}` } },
    { method: 'POST', path: '/auth/token', headers: json, body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: 'not-a-token' }) },
    { method: 'GET', path: '/healthz' },
    { method: 'GET', path: '/nowhere' },
  ];
  const readings: Array<{ requests: number; miB: number }> = [];
  let requests = 0;
  for (let block = 1; block <= blocks; block += 1) {
    while (requests < block * blockRequests) requests += (await bench.wrk({ url: service.url, connections: 50, seconds: 5, requests: mix })).requests;
    await delay(1_000);
    readings.push({ requests, miB: await residentMiB(service.pid) });
  }
  return readings;
}

