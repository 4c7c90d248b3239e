// The paths that do not hash, at 50 connections, each against a reference doing the same work:
// the same bytes from bare node:http, plus the same SQL through the same driver and pool size
// where the path reads or writes the database. First the client's ceiling, to show that wrk is
// never what limits them.
import { randomBytes } from 'node:crypto';
import { format, median, type Bench } from './bench.ts';
import { compare, comparisonTable, type Comparison, type Workload } from './compare.ts';
import type { RunningProcess } from './bench.ts';
import { seedPendingCodes, seedRefreshRequests, seedSignedIn } from './seed.ts';
import type { WrkRequest } from './wrk.ts';

const connections = 50;
/** The client counts as never the limit while every rate it drives stays under this share of its ceiling. */
const ceilingShare = 0.8;

export async function throughput(bench: Bench): Promise<void> {
  const only = process.argv.find((arg) => arg.startsWith('--workload='))?.slice('--workload='.length).split(',');
  const service = await bench.startService();
  try {
    const [reader] = await seedSignedIn(bench.sql, 'reader', 1, bench.passwordHash);
    const { publicId } = reader!.account;
    const { sessionId } = reader!.session;
    const json = { 'Content-Type': 'application/json' };
    const refreshRequests = (count: number): Promise<WrkRequest[]> => seedRefreshRequests(bench.sql, 'refresher', count, bench.passwordHash);
    const common = { connections, seconds: bench.seconds };
    const rejectedBody: WrkRequest = { method: 'POST', path: '/acc/reg/code', headers: json, body: JSON.stringify({ name: 'NOT VALID', email: 'nope', pwd: 1 }) };
    const workloads: Array<Workload & { name: string }> = [
      {
        name: 'rejected-body',
        title: 'POST /acc/reg/code rejected body (400)',
        ...common,
        expected: 400,
        request: rejectedBody,
        work: { kind: 'none' },
        referenceTitle: 'bare node:http',
        target: 0.8,
      },
      {
        name: 'unknown-code',
        title: 'POST /acc/reg unknown code (404)',
        ...common,
        expected: 404,
        request: { method: 'POST', path: '/acc/reg', headers: json, body: JSON.stringify({ code: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' }) },
        work: { kind: 'code-read', databaseUrl: bench.databaseUrl },
        referenceTitle: 'bare node:http + the code read',
        target: 0.9,
      },
      {
        name: 'account',
        title: 'GET /acc/me (200)',
        ...common,
        expected: 200,
        request: { method: 'GET', path: '/acc/me', headers: { Authorization: `Bearer ${bench.accessToken(publicId, sessionId)}` } },
        work: { kind: 'account-read', databaseUrl: bench.databaseUrl, publicId, sessionId },
        referenceTitle: 'bare node:http + the account and session read',
        target: 0.9,
      },
      {
        name: 'refresh',
        title: 'POST /auth/token refresh (200)',
        ...common,
        expected: 200,
        fresh: refreshRequests,
        guessRps: 3000,
        work: { kind: 'refresh-rotation', databaseUrl: bench.databaseUrl },
        referenceTitle: 'bare node:http + the rotation transaction',
        target: 0.9,
      },
      {
        name: 'activation',
        title: 'POST /acc/reg activation (204)',
        ...common,
        expected: 204,
        fresh: async (count) => (await seedPendingCodes(bench.sql, count, bench.passwordHash)).map((code) => ({ method: 'POST', path: '/acc/reg', headers: json, body: JSON.stringify({ code }) })),
        guessRps: 2000,
        work: { kind: 'activation', databaseUrl: bench.databaseUrl, secret: bench.secret },
        referenceTitle: 'bare node:http + the activation statements',
        target: null,
      },
    ];

    const ceiling = await clientCeiling(bench, rejectedBody, fakeRefreshRequests(json));
    const comparisons: Comparison[] = [];
    for (const workload of workloads) {
      if (only !== undefined && !only.includes(workload.name)) continue;
      process.stderr.write(`bench: throughput ${workload.name}…\n`);
      comparisons.push(await compare(bench, service, workload));
      if (workload.name === 'rejected-body' && 'request' in workload) comparisons.push(await httpLayerOnly(bench, service, workload));
    }
    bench.print(`Paths that do not hash: wrk -t1 -c${connections}, ${bench.seconds} s a run, median of 3 alternating rounds`, [
      ...comparisonTable(comparisons),
      '',
      ...ceilingLines(ceiling, comparisons),
    ]);
  } finally {
    await service.stop();
  }
}

/**
 * The rejected body once more, served by the service's own HTTP layer (server.ts) around a
 * handler that does only what bare node:http does, against the same bare server: how much of
 * the service's gap the layer alone makes (request id, routing, headers, metric, log line).
 */
async function httpLayerOnly(bench: Bench, service: RunningProcess, workload: Workload & { request: WrkRequest }): Promise<Comparison> {
  process.stderr.write('bench: throughput rejected-body through the HTTP layer only…\n');
  const reply = await bench.capture(service.url, workload.request);
  const layer = await bench.startReference({ reply, parseBody: true, work: { kind: 'none' }, httpLayer: true });
  try {
    return await compare(bench, layer, { ...workload, title: "the same, the service's HTTP layer only (bare's handler)", target: null });
  } finally {
    await layer.stop();
  }
}

type Ceiling = { same: number; fed: number };

/** Requests shaped like the refresh workload's, for the bare server, which looks at nothing. */
function fakeRefreshRequests(headers: Record<string, string>): WrkRequest[] {
  return Array.from({ length: 20_000 }, () => ({ method: 'POST', path: '/auth/token', headers, body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: randomBytes(32).toString('base64url') }) }));
}

/**
 * What wrk reaches against bare node:http that reads the body and answers 204: with one request
 * formatted once, and with fresh requests handed out by its Lua script, as the fed workloads use.
 */
async function clientCeiling(bench: Bench, request: WrkRequest, fedRequests: WrkRequest[]): Promise<Ceiling> {
  process.stderr.write('bench: throughput client ceiling…\n');
  const bare = await bench.startReference({ reply: { status: 204, headers: [], body: '' }, parseBody: false, work: { kind: 'none' } });
  try {
    const runs = async (plan: { request: WrkRequest } | { requests: WrkRequest[] }) => {
      await bench.wrk({ url: bare.url, connections, seconds: bench.seconds / 5, ...plan });
      const rates: number[] = [];
      for (let round = 0; round < 3; round += 1) rates.push((await bench.wrk({ url: bare.url, connections, seconds: bench.seconds, ...plan })).rps);
      return median(rates);
    };
    return { same: await runs({ request }), fed: await runs({ requests: fedRequests }) };
  } finally {
    await bare.stop();
  }
}

function ceilingLines(ceiling: Ceiling, comparisons: Comparison[]): string[] {
  const line = (kind: string, limit: number, fed: boolean) => {
    const measured = comparisons.filter((comparison) => ('fresh' in comparison.workload) === fed);
    if (measured.length === 0) return `Client ceiling, ${kind}: ${format(limit, 0)} req/s.`;
    const highest = Math.max(...measured.flatMap((comparison) => [comparison.serviceRps, comparison.referenceRps]));
    const verdict =
      highest <= ceilingShare * limit
        ? `well above the highest rate measured with it, ${format(highest, 0)} req/s (${format(highest / limit, 2)} of the ceiling)`
        : `NOT well above the highest rate measured with it, ${format(highest, 0)} req/s (${format(highest / limit, 2)} of the ceiling): the client may be what limits those rows`;
    return `Client ceiling, ${kind}: wrk -t1 against bare node:http answering 204 reaches ${format(limit, 0)} req/s, ${verdict}.`;
  };
  return [line('one request formatted once', ceiling.same, false), line('fresh requests from its Lua script', ceiling.fed, true)];
}
