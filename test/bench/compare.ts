// A workload of the service against its reference: the same requests, the same client, the same
// connections, run in turn over three rounds so that a noisy neighbour hits both alike.
import { cpuSeconds, format, median, type Bench, type RunningProcess } from './bench.ts';
import type { ReferenceWork } from './reference-server.ts';
import type { WrkRequest, WrkResult } from './wrk.ts';

export type Workload = {
  title: string;
  /** The status every answer must have. */
  expected: number;
  connections: number;
  /** What the reference does besides reading the body and answering the same bytes. */
  work: ReferenceWork;
  /** How the table names the reference. */
  referenceTitle: string;
  /** The lowest ratio to the reference this path should reach; null when there is no goal. */
  target: number | null;
  /** Seconds a timed run lasts (whole seconds, as wrk takes them); warm-up runs take a fifth of it. */
  seconds: number;
  timeoutSeconds?: number;
} & (
  | { request: WrkRequest }
  /**
   * `count` requests that each use something up (a refresh token, a code), never handed out
   * before. `guessRps` sizes the first batch; later batches follow the rates measured.
   */
  | { fresh(count: number): Promise<WrkRequest[]>; guessRps: number }
);

/** A timed run, counting only answers with the expected status, and the CPU time its server used for each. */
export type Run = WrkResult & { cpuUsPerRequest: number };

export type Comparison = {
  workload: Workload;
  service: Run[];
  reference: Run[];
  /** Median requests a second over the rounds. */
  serviceRps: number;
  referenceRps: number;
  ratio: number;
  /** Lowest and highest ratio of a single round, to show the noise. */
  roundRatios: [number, number];
  /** Anything that makes a run doubtful: wrong statuses, socket errors, fed requests that ran out. */
  problems: string[];
};

const rounds = 3;

export async function compare(bench: Bench, service: RunningProcess, workload: Workload): Promise<Comparison> {
  const problems: string[] = [];
  let highestRps = 'guessRps' in workload ? workload.guessRps : 0;
  const requestsFor = async (seconds: number): Promise<{ request: WrkRequest } | { requests: WrkRequest[] }> => {
    if ('request' in workload) return { request: workload.request };
    // Twice what the fastest run so far would use, so that a run never runs out (a round can be
    // half as fast again as the one before it on this machine).
    // wrk runs whole seconds, at least one (wrk.ts): a warm-up of --quick's 0.4 s runs for 1 s.
    return { requests: await workload.fresh(Math.ceil(highestRps * Math.max(1, Math.round(seconds)) * 2) + 50) };
  };
  const drive = async (who: string, server: RunningProcess, seconds: number): Promise<Run> => {
    const plan = await requestsFor(seconds);
    const cpuBefore = await cpuSeconds(server.pid);
    const result = await bench.wrk({ url: server.url, connections: workload.connections, seconds, ...(workload.timeoutSeconds === undefined ? {} : { timeoutSeconds: workload.timeoutSeconds }), ...plan });
    const cpu = (await cpuSeconds(server.pid)) - cpuBefore;
    highestRps = Math.max(highestRps, result.rps);
    // wrk tells statuses of 400 and over from the rest, which is enough for every workload here.
    const wrongStatuses = workload.expected >= 400 ? result.requests - result.errorStatuses : result.errorStatuses;
    if (wrongStatuses > 0) problems.push(`${who}: ${wrongStatuses} of ${result.requests} answers were not ${workload.expected}`);
    if (result.socketErrors > 0) problems.push(`${who}: ${result.socketErrors} socket errors or timeouts`);
    if (result.wrapped > 0) problems.push(`${who}: the fresh requests ran out`);
    // Only answers with the expected status count: a quick 503 is no throughput.
    return { ...result, rps: (result.requests - wrongStatuses) / result.seconds, cpuUsPerRequest: (cpu * 1e6) / result.requests };
  };

  const sample = 'request' in workload ? workload.request : (await workload.fresh(1))[0]!;
  const reply = await bench.capture(service.url, sample);
  if (reply.status !== workload.expected) throw new Error(`${workload.title}: the service answered ${reply.status}, not ${workload.expected}: ${reply.body}`);
  const reference = await bench.startReference({ reply, parseBody: sample.body !== undefined, work: workload.work });
  try {
    const check = await bench.capture(reference.url, 'request' in workload ? workload.request : (await workload.fresh(1))[0]!);
    if (JSON.stringify(check) !== JSON.stringify(reply)) problems.push(`the reference does not answer the service's bytes: ${JSON.stringify(check)}`);
    const warmUp = workload.seconds / 5;
    await drive('service warm-up', service, warmUp);
    await drive('reference warm-up', reference, warmUp);
    const serviceRuns: Run[] = [];
    const referenceRuns: Run[] = [];
    for (let round = 0; round < rounds; round += 1) {
      serviceRuns.push(await drive('service', service, workload.seconds));
      referenceRuns.push(await drive('reference', reference, workload.seconds));
    }
    const serviceRps = median(serviceRuns.map((run) => run.rps));
    const referenceRps = median(referenceRuns.map((run) => run.rps));
    const ratios = serviceRuns.map((run, round) => run.rps / referenceRuns[round]!.rps);
    return { workload, service: serviceRuns, reference: referenceRuns, serviceRps, referenceRps, ratio: serviceRps / referenceRps, roundRatios: [Math.min(...ratios), Math.max(...ratios)], problems };
  } finally {
    await reference.stop();
  }
}

/**
 * The table of comparisons, one row each, and a line for every problem seen. Latencies are
 * wrk's, over every answer. CPU µs/req is the CPU time the server process used (user and
 * system) for each request: less noisy than rates on a shared machine, and it shows what the
 * service adds to the same work, without the database's or the client's share.
 */
export function comparisonTable(comparisons: Comparison[]): string[] {
  const of = (runs: Run[], pick: (run: Run) => number, digits = 1) => format(median(runs.map(pick)), digits);
  return [
    '| workload | req/s | p50 ms | p99 ms | CPU µs/req | reference (same work) | req/s | p50 ms | p99 ms | CPU µs/req | ratio | rounds | target |',
    '|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|',
    ...comparisons.map(({ workload, service, reference, serviceRps, referenceRps, ratio, roundRatios }) => {
      const verdict = workload.target === null ? '—' : `${ratio >= workload.target ? '≥' : '**<**'} ${workload.target}`;
      const digits = serviceRps < 100 ? 1 : 0;
      const cpu = (runs: Run[]) => of(runs, (run) => run.cpuUsPerRequest, serviceRps < 100 ? 0 : 1);
      return `| ${workload.title} | ${format(serviceRps, digits)} | ${of(service, (run) => run.p50Ms)} | ${of(service, (run) => run.p99Ms)} | ${cpu(service)} | ${workload.referenceTitle} | ${format(referenceRps, digits)} | ${of(reference, (run) => run.p50Ms)} | ${of(reference, (run) => run.p99Ms)} | ${cpu(reference)} | ${format(ratio, 2)} | ${format(roundRatios[0], 2)}–${format(roundRatios[1], 2)} | ${verdict} |`;
    }),
    ...comparisons.flatMap(({ workload, problems }) => problems.map((problem) => `- ${workload.title}: ${problem}`)),
  ];
}
