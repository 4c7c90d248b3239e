// The load generator, run as its own process so that it does not share an event loop with
// what it measures. It reads a plan as JSON from argv, drives `connections` keep-alive
// connections for `seconds`, and prints the results as one JSON line.
import { Agent, request } from 'node:http';
import { readFileSync } from 'node:fs';

export type Plan = {
  url: string;
  method: string;
  path: string;
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  /** One body for every request, or a file of JSON lines, one body (and token) a request. */
  body?: string;
  bodiesFile?: string;
  /**
   * Open loop: start this many requests a second whatever the answers, instead of keeping
   * `connections` busy. An overload is an offered rate, not a closed loop that speeds up as
   * fast as refusals come back.
   */
  ratePerSecond?: number;
};

export type LoadResult = { requests: number; seconds: number; statuses: Record<string, number>; latenciesMs: Record<string, number[]> };

const plan = JSON.parse(process.argv[2]!) as Plan;
const items = plan.bodiesFile === undefined ? [] : readFileSync(plan.bodiesFile, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as { body: string; token?: string });
const agent = new Agent({ keepAlive: true, maxSockets: plan.connections });
const target = new URL(plan.path, plan.url);
const statuses: Record<string, number> = {};
const latenciesMs: Record<string, number[]> = {};
let next = 0;
const started = performance.now();
const deadline = started + plan.seconds * 1000;

function once(): Promise<void> {
  const item = items.length > 0 ? items[next++ % items.length]! : { body: plan.body };
  const headers: Record<string, string> = { ...plan.headers };
  if (item.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(item.body));
  }
  if ('token' in item && item.token !== undefined) headers.authorization = `Bearer ${item.token}`;
  const sent = performance.now();
  return new Promise((resolve) => {
    const req = request(target, { method: plan.method, headers, agent }, (res) => {
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
    req.end(item.body);
  });
}

async function worker(): Promise<void> {
  while (performance.now() < deadline) await once();
}

async function openLoop(rate: number): Promise<void> {
  const inFlight: Array<Promise<void>> = [];
  for (let sent = 0; performance.now() < deadline; sent += 1) {
    const due = started + (sent * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    inFlight.push(once());
  }
  await Promise.all(inFlight);
}

await (plan.ratePerSecond === undefined ? Promise.all(Array.from({ length: plan.connections }, worker)) : openLoop(plan.ratePerSecond));
const result: LoadResult = { requests: Object.values(statuses).reduce((a, b) => a + b, 0), seconds: (performance.now() - started) / 1000, statuses, latenciesMs };
process.stdout.write(`${JSON.stringify(result)}\n`);
agent.destroy();
