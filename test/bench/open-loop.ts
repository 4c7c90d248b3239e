// An open-loop load generator, run as its own process: it starts `ratePerSecond` requests a second
// whatever the answers, as an overload arrives, where wrk would keep a fixed number of
// connections busy and slow down with the service. At the rates it is used for (a hundred a
// second) a Node client is never the limit. Sends registrations, each for a new name and address.
// Reads a plan as JSON from argv, prints one JSON line.
import { Agent, request } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';

export type OpenLoopPlan = { url: string; namePrefix: string; ratePerSecond: number; seconds: number };
export type OpenLoopResult = { requests: number; statuses: Record<string, number>; latenciesMs: Record<string, number[]> };

const plan = JSON.parse(process.argv[2]!) as OpenLoopPlan;
const agent = new Agent({ keepAlive: true, maxSockets: 1_000 });
const target = new URL('/acc/reg/code', plan.url);
const statuses: Record<string, number> = {};
const latenciesMs: Record<string, number[]> = {};

function send(body: string): Promise<void> {
  const sent = performance.now();
  return new Promise((resolve) => {
    const req = request(target, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }, agent }, (res) => {
      res.resume();
      res.on('end', () => {
        const status = String(res.statusCode);
        statuses[status] = (statuses[status] ?? 0) + 1;
        (latenciesMs[status] ??= []).push(performance.now() - sent);
        resolve();
      });
    });
    req.on('error', () => {
      statuses.error = (statuses.error ?? 0) + 1;
      resolve();
    });
    req.end(body);
  });
}

const started = performance.now();
const inFlight: Array<Promise<void>> = [];
for (let sent = 0; performance.now() < started + plan.seconds * 1000; sent += 1) {
  const wait = started + (sent * 1000) / plan.ratePerSecond - performance.now();
  if (wait > 0) await delay(wait);
  const name = `${plan.namePrefix}-${sent}`;
  inFlight.push(send(JSON.stringify({ name, email: `${name}@bench.example`, pwd: 'bench-password' })));
}
await Promise.all(inFlight);
const result: OpenLoopResult = { requests: Object.values(statuses).reduce((a, b) => a + b, 0), statuses, latenciesMs };
process.stdout.write(`${JSON.stringify(result)}\n`);
agent.destroy();
