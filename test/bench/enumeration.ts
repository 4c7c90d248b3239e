// Pairs of requests that must take the same time, or their timing tells whether an account
// exists: one request at a time, alternating, so that only the path differs.
import { setTimeout as delay } from 'node:timers/promises';
import { createPasswordHasher } from '../../src/core/passwords.ts';
import { defaultScrypt } from '../../src/config/config.ts';
import { format, median, type Bench } from './bench.ts';
import { seedAccounts } from './seed.ts';

export async function enumeration(bench: Bench): Promise<void> {
  const pairs = bench.quick ? 6 : 20;
  const victims = await seedAccounts(bench.sql, 'victim', pairs, bench.passwordHash);
  // Accounts whose hashes were made with older (cheaper) scrypt parameters exist before the
  // service starts, so that it wraps them at start-up; the pair times them against unknown users.
  const olderParams = { ln: defaultScrypt.ln - 1, r: defaultScrypt.r, p: defaultScrypt.p };
  const olderHash = await createPasswordHasher(olderParams).hash('bench-password');
  const older = await seedAccounts(bench.sql, 'older', pairs, olderHash);
  const service = await bench.startService();
  try {
    const olderIds = older.map((account) => account.id);
    while ((await bench.sql`SELECT count(*)::int AS n FROM accounts WHERE id IN ${bench.sql(olderIds)} AND password_hash = ${olderHash}`)[0]!.n > 0) {
      await delay(200);
    }
    const timeOne = async (path: string, body: object) => {
      // A pause first, so that the mail a previous request queued is sent before this one is timed.
      await delay(150);
      const sent = performance.now();
      const response = await fetch(new URL(path, service.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      await response.arrayBuffer();
      return performance.now() - sent;
    };
    const results = [
      { pair: 'POST /acc/reg/code: address with an account / new address', a: [] as number[], b: [] as number[] },
      { pair: 'POST /acc/pwd/code: address with an account / new address', a: [], b: [] },
      { pair: 'POST /auth/token: wrong password / unknown user', a: [], b: [] },
      { pair: `POST /auth/token: wrong password on a hash made with ln=${olderParams.ln} (wrapped) / unknown user`, a: [], b: [] },
    ];
    const [registration, reset, signIn, wrapped] = results as [(typeof results)[0], (typeof results)[0], (typeof results)[0], (typeof results)[0]];
    // Which of a pair goes first alternates, so that anything that follows a request in time
    // (its mail, sent within 2 s; a busy neighbour) falls on both sides alike.
    const timePair = async (pair: (typeof results)[0], path: string, a: object, b: object, aFirst: boolean) => {
      if (aFirst) {
        pair.a.push(await timeOne(path, a));
        pair.b.push(await timeOne(path, b));
      } else {
        pair.b.push(await timeOne(path, b));
        pair.a.push(await timeOne(path, a));
      }
    };
    for (let index = 0; index < pairs; index += 1) {
      const victim = victims[index]!;
      const aFirst = index % 2 === 0;
      await timePair(registration, '/acc/reg/code', { name: `taken-${index}`, email: `${victim.name}@bench.example`, pwd: 'bench-password' }, { name: `fresh-${index}`, email: `fresh-${index}@bench.example`, pwd: 'bench-password' }, aFirst);
      await timePair(reset, '/acc/pwd/code', { email: `${victim.name}@bench.example` }, { email: `nobody-${index}@bench.example` }, aFirst);
      await timePair(signIn, '/auth/token', { grant_type: 'password', username: victim.name, password: 'wrong-password' }, { grant_type: 'password', username: `nobody-${index}`, password: 'wrong-password' }, aFirst);
      await timePair(wrapped, '/auth/token', { grant_type: 'password', username: older[index]!.name, password: 'wrong-password' }, { grant_type: 'password', username: `nobody-older-${index}`, password: 'wrong-password' }, aFirst);
    }
    bench.print(
      `Enumeration: ${pairs} pairs, one request at a time after a 150 ms pause`,
      results.map(({ pair, a, b }) => {
        const ratio = median(a) / median(b);
        return `- ${pair}: median ${format(median(a))} / ${format(median(b))} ms, ratio ${format(ratio, 3)} (${Math.abs(ratio - 1) <= 0.1 ? 'within' : 'OUTSIDE'} 10 %).`;
      }),
    );
  } finally {
    await service.stop();
  }
}
