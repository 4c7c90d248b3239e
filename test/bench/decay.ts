// The decay run: does DB-bound throughput hold up with uptime? GET /acc/me for 60 s at 50
// connections against a fresh service process, driven by wrk: one wrk run per 10 s window, back
// to back, so that every window has its own rate without a Lua script. Self-contained: it needs a
// running service (its URL and process id) and a valid token.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

export type DecayPlan = { url: string; pid: number; token: string; seconds?: number; windowSeconds?: number; connections?: number };

export type DecayResult = {
  windowSeconds: number;
  connections: number;
  /** Requests a second in each window, in order. */
  rates: number[];
  /**
   * Resident memory of the service in each window: the median of one sample a second, because
   * a single sample lands anywhere in a garbage-collection cycle and swings by 15 %.
   */
  rssMiB: number[];
  /** Answers that were not 2xx, and socket errors, over the whole run: a fast failure is not throughput. */
  failures: number;
};

export async function runDecay({ url, pid, token, seconds = 60, windowSeconds = 10, connections = 50 }: DecayPlan): Promise<DecayResult> {
  const target = new URL('/acc/me', url).toString();
  const rates: number[] = [];
  const rssMiB: number[] = [];
  let failures = 0;
  for (let window = 0; window < seconds / windowSeconds; window += 1) {
    const samples: number[] = [];
    const sampler = setInterval(() => void residentMiB(pid).then((mib) => samples.push(mib)), 1000);
    const result = await runWrk(target, token, connections, windowSeconds).finally(() => clearInterval(sampler));
    rates.push(result.rps);
    rssMiB.push(median([...samples, await residentMiB(pid)]));
    failures += result.failures;
  }
  return { windowSeconds, connections, rates, rssMiB, failures };
}

export function formatDecay(result: DecayResult): string {
  const { rates, rssMiB, windowSeconds: window } = result;
  const ratio = rates.at(-1)! / rates[0]!;
  const memory = rssMiB.at(-1)! / rssMiB[0]!;
  const failures = result.failures === 0 ? '' : `; ${result.failures} answers were not 2xx or failed`;
  return (
    `Decay (GET /acc/me, ${rates.length * window} s at ${result.connections} connections, wrk, fresh process): ` +
    `req/s per ${window} s ${rates.map((rate) => rate.toFixed(0)).join(' / ')}; last/first ${ratio.toFixed(2)} (${ratio >= 0.9 ? '≥' : '<'} 0.9); ` +
    `resident MiB per ${window} s (median) ${rssMiB.map((mib) => mib.toFixed(0)).join(' / ')}; last/first ${memory.toFixed(2)} ` +
    `(${Math.abs(memory - 1) <= 0.1 ? 'within' : 'outside'} 10 %)${failures}.`
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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function residentMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
}
