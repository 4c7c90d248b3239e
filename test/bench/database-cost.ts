// What each path costs the database, the one part every instance shares: the round trips it
// sends (counted by test/e2e/round-trips.test.ts), the CPU time PostgreSQL spends per request,
// and the scale figure that follows, requests a second per PostgreSQL core. The CPU time is
// read from /proc: every process of the local PostgreSQL (the postmaster and its children,
// whose time the postmaster also collects when a backend exits), before and after a run, less
// what the idle service costs it over the same time (its workers poll). Only a local PostgreSQL can be measured so.
//
// Every path of the round-trip table is driven with requests of its own, each using up what
// it needs (a token, a code, an account). The paths that hash a password run on a second
// service with cheap scrypt parameters (SCRYPT_PARAMS=ln=4,r=8,p=1), on accounts whose hashes
// have those parameters: the database sees the same statements and rows as at the production
// parameters, only more of them a second, so its CPU per request can be measured. It has 16
// hashing slots, so that its queue (four times the slots) holds the 50 connections: otherwise
// it would answer some with 503, as it should under that load.
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { createPasswordHasher } from '../../src/core/passwords.ts';
import { formatScryptParams, type ScryptParams } from '../../src/config/config.ts';
import { roundTripBudgets } from '../helpers/round-trip-budgets.ts';
import { waitUntil } from '../helpers/wait.ts';
import { format, type Bench, type RunningService } from './bench.ts';
import { seedAccounts, seedPendingCodes, seedRefreshRequests, seedResetCodes, seedSessions, seedSignedIn, type SeededAccount } from './seed.ts';
import type { WrkRequest } from './wrk.ts';

const connections = 50;
const cheapScrypt: ScryptParams = { ln: 4, r: 8, p: 1 };
/** The longest the request resolver may take to catch up after a run of registration or reset requests. */
const drainLimitMs = 120_000;

type Path = {
  /** As the round-trip table and roundTripBudgets name it. */
  name: string;
  title: string;
  expected: number;
  /** Runs on the service with cheap scrypt parameters. */
  hashes?: true;
  /** Leaves rows for the request resolver (registration_requests, reset_requests): waited for, and counted. */
  resolved?: true;
  /** `count` fresh requests (or one, sent again and again). */
  requests(count: number): Promise<WrkRequest[]> | WrkRequest[];
};

export async function databaseCost(bench: Bench): Promise<void> {
  const service = await bench.startService();
  const hashing = await bench.startService({ SCRYPT_PARAMS: formatScryptParams(cheapScrypt), HASH_CONCURRENCY: '16' });
  try {
    const [backend] = await bench.sql`SELECT pg_backend_pid() AS pid`;
    const postmaster = await parentPid(backend!.pid as number);
    const cheapHash = await createPasswordHasher(cheapScrypt).hash('bench-password');
    const json = { 'Content-Type': 'application/json' };
    const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
    const bearer = (account: SeededAccount, sessionId: string) => ({ Authorization: `Bearer ${bench.accessToken(account.publicId, sessionId)}` });
    /** Accounts (with `bench-password` at the cheap parameters when `cheap`), each with one session. */
    const signedIn = (prefix: string, count: number, cheap = false) => seedSignedIn(bench.sql, prefix, count, cheap ? cheapHash : bench.passwordHash);
    const [reader] = await signedIn('cost-reader', 1);
    const paths: Path[] = [
      {
        name: 'GET /acc/me',
        title: 'GET /acc/me (200)',
        expected: 200,
        requests: () => [{ method: 'GET', path: '/acc/me', headers: bearer(reader!.account, reader!.session.sessionId) }],
      },
      {
        name: 'refresh',
        title: 'POST /auth/token refresh (200)',
        expected: 200,
        requests: (count) => seedRefreshRequests(bench.sql, 'cost-refresh', count, bench.passwordHash),
      },
      {
        name: 'activation',
        title: 'POST /acc/reg activation (204)',
        expected: 204,
        requests: async (count) => (await seedPendingCodes(bench.sql, count, bench.passwordHash)).map((code) => ({ method: 'POST', path: '/acc/reg', headers: json, body: JSON.stringify({ code }) })),
      },
      {
        name: 'revoke one session',
        title: 'DELETE /acc/me/sessions/{id} (204)',
        expected: 204,
        requests: async (count) => {
          const callers = await signedIn('cost-revoke-one', count);
          const others = await seedSessions(bench.sql, callers.map(({ account }) => account.id));
          return callers.map(({ account, session }, index) => ({ method: 'DELETE', path: `/acc/me/sessions/${others[index]!.sessionId}`, headers: bearer(account, session.sessionId) }));
        },
      },
      {
        name: 'revoke every session',
        title: 'DELETE /acc/me/sessions (204)',
        expected: 204,
        requests: async (count) => (await signedIn('cost-revoke-all', count)).map(({ account, session }) => ({ method: 'DELETE', path: '/acc/me/sessions', headers: bearer(account, session.sessionId) })),
      },
      {
        name: 'revoke a token (RFC 7009)',
        title: 'POST /auth/revoke (200)',
        expected: 200,
        requests: async (count) => (await signedIn('cost-revoke-token', count)).map(({ session }) => ({ method: 'POST', path: '/auth/revoke', headers: form, body: new URLSearchParams({ token: session.refreshToken }).toString() })),
      },
      {
        name: 'reset request',
        title: 'POST /acc/pwd/code, addresses with an account (204)',
        expected: 204,
        resolved: true,
        requests: async (count) => (await seedAccounts(bench.sql, 'cost-reset', count, bench.passwordHash)).map((account) => ({ method: 'POST', path: '/acc/pwd/code', headers: json, body: JSON.stringify({ email: `${account.name}@bench.example` }) })),
      },
      {
        name: 'registration request',
        title: 'POST /acc/reg/code, new names and addresses (204)',
        expected: 204,
        hashes: true,
        resolved: true,
        requests: (count) => {
          const stem = `r${Date.now().toString(36)}`;
          return Array.from({ length: count }, (_, index) => ({ method: 'POST', path: '/acc/reg/code', headers: json, body: JSON.stringify({ name: `${stem}-${index}`, email: `${stem}-${index}@bench.example`, pwd: 'bench-password' }) }));
        },
      },
      {
        name: 'sign-in',
        title: 'POST /auth/token password (200)',
        expected: 200,
        hashes: true,
        requests: async (count) =>
          (await seedAccounts(bench.sql, 'cost-sign-in', count, cheapHash)).map((account) => ({ method: 'POST', path: '/auth/token', headers: form, body: new URLSearchParams({ grant_type: 'password', username: account.name, password: 'bench-password' }).toString() })),
      },
      {
        name: 'password change',
        title: 'PUT /acc/me/pwd (204)',
        expected: 204,
        hashes: true,
        requests: async (count) =>
          (await signedIn('cost-change', count, true)).map(({ account, session }) => ({ method: 'PUT', path: '/acc/me/pwd', headers: { ...json, ...bearer(account, session.sessionId) }, body: JSON.stringify({ old_pwd: 'bench-password', new_pwd: 'bench-password-2' }) })),
      },
      {
        name: 'reset confirmation',
        title: 'POST /acc/pwd (204)',
        expected: 204,
        hashes: true,
        requests: async (count) => {
          const accounts = await signedIn('cost-reset-confirm', count, true);
          const codes = await seedResetCodes(bench.sql, accounts.map(({ account }) => account.id));
          return codes.map((code) => ({ method: 'POST', path: '/acc/pwd', headers: json, body: JSON.stringify({ code, new_pwd: 'bench-password-2' }) }));
        },
      },
      {
        name: 'deletion',
        title: 'DELETE /acc/me (204)',
        expected: 204,
        hashes: true,
        requests: async (count) =>
          (await signedIn('cost-deletion', count, true)).map(({ account, session }) => ({ method: 'DELETE', path: '/acc/me', headers: { ...json, ...bearer(account, session.sessionId) }, body: JSON.stringify({ pwd: 'bench-password' }) })),
      },
    ];
    const only = process.argv.find((arg) => arg.startsWith('--path='))?.slice('--path='.length).split(',');

    // What PostgreSQL spends a second while both services idle (their workers poll): subtracted from every run.
    const idleSeconds = bench.quick ? 2 : 5;
    const idleBefore = await databaseCpuSeconds(postmaster);
    await delay(idleSeconds * 1000);
    const idlePerSecond = ((await databaseCpuSeconds(postmaster)) - idleBefore) / idleSeconds;

    const lines = [
      '| Path | Round trips (budget) | req/s | PostgreSQL CPU per request (µs) | req/s per PostgreSQL core |',
      '|---|---:|---:|---:|---:|',
    ];
    const rates = new Map<string, number>();
    for (const path of paths) {
      if (only !== undefined && !only.includes(path.name)) continue;
      process.stderr.write(`bench: database-cost ${path.name}…\n`);
      const target: RunningService = path.hashes === true ? hashing : service;
      // Enough fresh requests for a generous rate; a path that uses them up reports `wrapped`.
      const requests = await path.requests(Math.max(1, Math.round(bench.seconds * (path.hashes === true ? 2500 : 4000))));
      const plan = requests.length === 1 ? { request: requests[0]! } : { requests };
      const started = performance.now();
      const before = await databaseCpuSeconds(postmaster);
      const run = await bench.wrk({ url: target.url, connections, seconds: bench.seconds, timeoutSeconds: 10, ...plan });
      const drainMs = path.resolved === true ? await resolved(bench) : 0;
      const elapsed = (performance.now() - started) / 1000;
      const spent = (await databaseCpuSeconds(postmaster)) - before - idlePerSecond * elapsed;
      const served = run.requests - run.errorStatuses - run.socketErrors;
      rates.set(path.name, served / run.seconds);
      const notes = [
        ...(path.hashes === true ? [`SCRYPT_PARAMS=${formatScryptParams(cheapScrypt)}, HASH_CONCURRENCY=16`] : []),
        ...(path.resolved === true ? [Number.isFinite(drainMs) ? `+ ${format(drainMs / 1000)} s for the resolver to catch up, counted` : 'the resolver did NOT catch up'] : []),
        ...(run.errorStatuses + run.socketErrors > 0 || run.wrapped > 0 ? [`${run.errorStatuses} error statuses, ${run.socketErrors} socket errors, wrapped ${run.wrapped}`] : []),
      ];
      const title = notes.length === 0 ? path.title : `${path.title} (${notes.join('; ')})`;
      lines.push(`| ${title} | ${roundTripBudgets[path.name]} | ${format(served / run.seconds, 0)} | ${format((spent / served) * 1e6, 0)} | ${format(served / spent, 0)} |`);
    }
    lines.push('', `PostgreSQL CPU of the two idle services, subtracted from each run: ${format(idlePerSecond * 1000, 1)} ms a second.`);
    if (rates.has('refresh') && rates.has('GET /acc/me')) lines.push(`Refresh ÷ GET /acc/me in this run: ${format(rates.get('refresh')! / rates.get('GET /acc/me')!, 2)} (goal ≥ 0.35).`);
    bench.print(`Database cost per path: wrk -t1 -c${connections}, ${bench.seconds} s a run, PostgreSQL CPU from /proc`, lines);
  } finally {
    await Promise.all([service.stop(), hashing.stop()]);
    // The reset and registration runs queued mail by the thousand: later runs must not send it.
    await bench.sql`DELETE FROM outbox WHERE state = 'pending'`;
    // Nor may a later service find hashes at the cheap parameters: it would wrap them all in the
    // background at start-up, and its memory and hashing would be measured with that work.
    await bench.sql`DELETE FROM accounts WHERE password_hash LIKE ${`$scrypt$${formatScryptParams(cheapScrypt)}$%`}`;
  }
}

/**
 * Waits until the request resolver has resolved every recorded registration and reset request;
 * the time it took, or Infinity. Asked with EXISTS, which stops at the first row, so that the
 * asking adds next to nothing to the database CPU being measured.
 */
async function resolved(bench: Bench): Promise<number> {
  const started = performance.now();
  const empty = async () => (await bench.sql`SELECT NOT (EXISTS (SELECT 1 FROM registration_requests) OR EXISTS (SELECT 1 FROM reset_requests)) AS empty`)[0]!.empty === true;
  return waitUntil(empty, drainLimitMs).then(
    () => performance.now() - started,
    () => Infinity,
  );
}

async function parentPid(pid: number): Promise<number> {
  return Number((await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/^.*\) /s, '').split(' ')[1]);
}

/** CPU seconds of the postmaster, of its children that have exited, and of the children alive now. */
async function databaseCpuSeconds(postmaster: number): Promise<number> {
  const fields = async (pid: number) => (await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/^.*\) /s, '').split(' ');
  const own = await fields(postmaster);
  // utime, stime, cutime, cstime are fields 14-17 of stat, 11-14 after the command name.
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const child = await fields(Number(entry)).catch(() => null);
    if (child !== null && Number(child[1]) === postmaster) ticks += Number(child[11]) + Number(child[12]);
  }
  return ticks / 100;
}
