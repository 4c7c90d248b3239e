// The decay run: does DB-bound throughput hold up with uptime? GET /acc/me for 60 s at 50
// connections against a fresh service process, driven by wrk. Three back-to-back wrk runs
// (the first 10 s, the middle, the last 10 s) give the two windows without a Lua script.
// Self-contained: it needs a running service (its URL and process id) and a valid token.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

export type DecayPlan = { url: string; pid: number; token: string; seconds?: number; windowSeconds?: number; connections?: number };

export type DecayResult = {
  seconds: number;
  windowSeconds: number;
  connections: number;
  firstRps: number;
  lastRps: number;
  /** Resident memory of the service after the first window, and at the end. */
  rssFirstMiB: number;
  rssEndMiB: number;
  /** Answers that were not 2xx, and socket errors, over the whole run: a fast failure is not throughput. */
  failures: number;
};

export async function runDecay({ url, pid, token, seconds = 60, windowSeconds = 10, connections = 50 }: DecayPlan): Promise<DecayResult> {
  const target = new URL('/acc/me', url).toString();
  const drive = (duration: number) => runWrk(target, token, connections, duration);
  const first = await drive(windowSeconds);
  const rssFirstMiB = await residentMiB(pid);
  const middle = await drive(seconds - 2 * windowSeconds);
  const last = await drive(windowSeconds);
  return {
    seconds,
    windowSeconds,
    connections,
    firstRps: first.rps,
    lastRps: last.rps,
    rssFirstMiB,
    rssEndMiB: await residentMiB(pid),
    failures: first.failures + middle.failures + last.failures,
  };
}

export function formatDecay(result: DecayResult): string {
  const ratio = result.lastRps / result.firstRps;
  const memory = result.rssEndMiB / result.rssFirstMiB;
  const failures = result.failures === 0 ? '' : `; ${result.failures} answers were not 2xx or failed`;
  return (
    `Decay (GET /acc/me, ${result.seconds} s at ${result.connections} connections, wrk, fresh process): ` +
    `first ${result.windowSeconds} s ${result.firstRps.toFixed(0)} req/s, last ${result.windowSeconds} s ${result.lastRps.toFixed(0)} req/s, ` +
    `ratio ${ratio.toFixed(2)} (${ratio >= 0.9 ? '≥' : '<'} 0.9); resident memory ${result.rssFirstMiB.toFixed(0)} MiB after ${result.windowSeconds} s, ` +
    `${result.rssEndMiB.toFixed(0)} MiB at the end, ${memory.toFixed(2)} (${Math.abs(memory - 1) <= 0.1 ? 'within' : 'outside'} 10 %)${failures}.`
  );
}

async function runWrk(target: string, token: string, connections: number, seconds: number): Promise<{ rps: number; failures: number }> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '-H', `Authorization: Bearer ${token}`, target];
  const { stdout } = await promisify(execFile)('wrk', args).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOENT' ? new Error('the decay run needs wrk (Debian: apt-get install -y wrk)') : error;
  });
  const number = (pattern: RegExp) => Number(pattern.exec(stdout)?.[1] ?? 0);
  const rps = number(/Requests\/sec:\s+([\d.]+)/);
  if (rps === 0) throw new Error(`wrk reported no rate:\n${stdout}`);
  // wrk prints these lines only when the count is not zero.
  const failures = number(/Non-2xx or 3xx responses:\s+(\d+)/) + [...stdout.matchAll(/(?:connect|read|write|timeout) (\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
  return { rps, failures };
}

async function residentMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
}
