// The paths that hash, against raw scrypt at the same parameters and concurrency, answering the
// same bytes. Two connections per hashing slot, so that requests queue as they would under load.
// At 5-10 requests a second the client is never the limit.
import { defaultScrypt } from '../../src/config/config.ts';
import type { Bench } from './bench.ts';
import { compare, comparisonTable, type Comparison, type Workload } from './compare.ts';
import { seedAccounts, seedSignedIn } from './seed.ts';

export async function hashing(bench: Bench): Promise<void> {
  const service = await bench.startService();
  try {
    const json = { 'Content-Type': 'application/json' };
    let registered = 0;
    const common = {
      expected: 204,
      connections: bench.hashConcurrency * 2,
      // Long enough for a few dozen hashes a run even in a quick run.
      seconds: Math.max(bench.seconds, 5),
      // A password change waits for two hashes behind a full queue: well over wrk's default 2 s.
      timeoutSeconds: 20,
      work: { kind: 'scrypt', params: defaultScrypt, concurrency: bench.hashConcurrency },
      referenceTitle: `raw scrypt ln=${defaultScrypt.ln},r=${defaultScrypt.r},p=${defaultScrypt.p} at ${bench.hashConcurrency} at once`,
      guessRps: 10,
    } as const;
    const workloads: Workload[] = [
      {
        ...common,
        title: 'POST /acc/reg/code registration (204)',
        target: 0.95,
        fresh: async (count) =>
          Array.from({ length: count }, () => {
            registered += 1;
            return { method: 'POST', path: '/acc/reg/code', headers: json, body: JSON.stringify({ name: `new-${registered}`, email: `new-${registered}@bench.example`, pwd: 'bench-password' }) };
          }),
      },
      {
        ...common,
        // A different account each time: the sign-in throttle counts every check as a failure
        // until it succeeds, so parallel sign-ins of one account would be refused (429).
        title: 'POST /auth/token sign-in (200)',
        expected: 200,
        target: 0.95,
        fresh: async (count) =>
          (await seedAccounts(bench.sql, 'member', count, bench.passwordHash)).map((account) => ({
            method: 'POST',
            path: '/auth/token',
            headers: json,
            body: JSON.stringify({ grant_type: 'password', username: account.name, password: 'bench-password' }),
          })),
      },
      {
        ...common,
        // Two hashes (the old password checked, the new one hashed) against one: its ceiling is 0.5.
        title: 'PUT /acc/me/pwd password change, two hashes (204)',
        target: 0.47,
        fresh: async (count) =>
          (await seedSignedIn(bench.sql, 'changer', count, bench.passwordHash)).map(({ account, session }) => ({
            method: 'PUT',
            path: '/acc/me/pwd',
            headers: { ...json, Authorization: `Bearer ${bench.accessToken(account.publicId, session.sessionId)}` },
            body: JSON.stringify({ old_pwd: 'bench-password', new_pwd: 'bench-password-2' }),
          })),
      },
    ];
    const comparisons: Comparison[] = [];
    for (const workload of workloads) {
      process.stderr.write(`bench: hashing ${workload.title}…\n`);
      comparisons.push(await compare(bench, service, workload));
    }
    bench.facts.set('rawScryptRps', Math.max(...comparisons.map((comparison) => comparison.referenceRps)));
    bench.print(`Paths that hash: wrk -t1 -c${common.connections}, ${common.seconds} s a run, median of 3 alternating rounds, HASH_CONCURRENCY=${bench.hashConcurrency}`, comparisonTable(comparisons));
  } finally {
    await service.stop();
  }
}
