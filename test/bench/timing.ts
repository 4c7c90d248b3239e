// Can a stranger tell by timing whether an address or a name has an account? For every endpoint
// that takes one, SAMPLES requests a side, interleaved one at a time (which side goes first
// alternates), each with an address or name of its own (the per-address quota allows one request
// a minute). The answer is the AUC: the chance that a request of the first kind took longer than
// one of the second. 0.5 is a coin toss; the goal is 0.45 to 0.55.
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { coseKey, createAuthenticator } from '../helpers/authenticator.ts';
import { format, median, type Bench } from './bench.ts';
import { seedAccounts } from './seed.ts';

const aucGoal = [0.45, 0.55] as const;
/** Between requests: lets what a request left behind (its mail, its resolution) land on either side alike. */
const pauseMs = 20;

type Pair = {
  endpoint: string; a: string; b: string;
  /** What the timed request sends, made before the clock starts (a passkey assertion needs its options first). */
  prepare?(index: number, side: 'a' | 'b'): Promise<object>;
  send(index: number, side: 'a' | 'b', body?: object): Promise<unknown>;
};

export async function timing(bench: Bench): Promise<void> {
  const samples = bench.quick ? 40 : 300;
  const accounts = await seedAccounts(bench.sql, 'timing', samples, bench.passwordHash);
  const origin = 'http://localhost:8080';
  const service = await bench.startService({
    WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGINS: origin,
    FEATURES: 'second-factor,passkeys,email-change,common-passwords,sign-in-notices,export,email-code',
  });
  // The costliest key a passkey may have (RS256, 4096 bits), against the ES256 decoy that an
  // unknown credential is checked with: a stranger who knows a credential id must not learn
  // from the time whether it is registered.
  const owner = accounts[0]!;
  const credentialId = randomBytes(32);
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 4096 });
  await bench.sql`
    INSERT INTO passkeys (id, account_id, credential_id, public_key, algorithm, sign_count, transports,
      backup_eligible, backed_up, aaguid, name, created_at)
    VALUES (${randomUUID()}, ${owner.id}, ${credentialId}, ${coseKey(-257, publicKey)}, -257, 0, '{}',
      true, true, '00000000-0000-0000-0000-000000000000', 'timing', now())`;
  const [ownerRow] = await bench.sql`SELECT user_handle FROM accounts WHERE id = ${owner.id}`;
  const userHandle = ownerRow!.user_handle as Buffer;
  try {
    const post = async (path: string, body: object) => {
      const response = await fetch(new URL(path, service.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      await response.arrayBuffer();
      return response.status;
    };
    const addressOf = (index: number, side: 'a' | 'b') => (side === 'a' ? `${accounts[index]!.name}@bench.example` : `timing-nobody-${index}@bench.example`);
    const pairs: Pair[] = [
      {
        endpoint: 'POST /acc/pwd/code',
        a: 'address with an account',
        b: 'unknown address',
        send: (index, side) => post('/acc/pwd/code', { email: addressOf(index, side) }),
      },
      {
        endpoint: 'POST /auth/code',
        a: 'address with an account',
        b: 'unknown address',
        send: (index, side) => post('/auth/code', { email: addressOf(index, side) }),
      },
      {
        endpoint: 'POST /acc/reg/code',
        a: 'address with an account',
        b: 'new address',
        send: (index, side) => post('/acc/reg/code', { name: `timing-${side}-${index}`, email: addressOf(index, side), pwd: 'bench-password' }),
      },
      {
        endpoint: 'POST /auth/token',
        a: 'wrong password',
        b: 'unknown name',
        send: (index, side) => post('/auth/token', { grant_type: 'password', username: side === 'a' ? accounts[index]!.name : `timing-nobody-${index}`, password: 'wrong-password' }),
      },
      {
        endpoint: 'POST /auth/token (passkey, a bad signature)',
        a: 'registered RS256-4096 credential',
        b: 'unknown credential',
        prepare: async (_index, side) => {
          const options = await fetch(new URL('/auth/passkey/options', service.url), { method: 'POST' });
          const { challenge_id, options: request } = (await options.json()) as { challenge_id: string; options: { challenge: string } };
          // Signed with a key of its own: for the registered credential, a bad signature.
          const authenticator = createAuthenticator(-7, { counting: false });
          authenticator.credentialId = side === 'a' ? credentialId : randomBytes(32);
          authenticator.userHandle = userHandle.toString('base64url');
          const credential = authenticator.assert(request, origin, 'localhost');
          return { grant_type: 'urn:account-service:grant-type:passkey', challenge_id, credential };
        },
        send: async (_index, side, body) => {
          const status = await post('/auth/token', body!);
          if (status !== 400) throw new Error(`a passkey sign-in with a bad signature (${side}) answered ${status}, not 400`);
        },
      },
    ];
    const lines: string[] = [];
    // --pairs=passkey: only the pairs whose endpoint contains one of the words.
    const only = process.argv.find((arg) => arg.startsWith('--pairs='))?.slice('--pairs='.length).split(',');
    for (const pair of pairs.filter(({ endpoint }) => only?.some((word) => endpoint.includes(word)) ?? true)) {
      const times = { a: [] as number[], b: [] as number[] };
      const timeOne = async (index: number, side: 'a' | 'b') => {
        const body = await pair.prepare?.(index, side);
        await delay(pauseMs);
        const started = performance.now();
        await pair.send(index, side, body);
        times[side].push(performance.now() - started);
      };
      for (let index = 0; index < samples; index += 1) {
        const order: Array<'a' | 'b'> = index % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
        for (const side of order) await timeOne(index, side);
      }
      const auc = areaUnderCurve(times.a, times.b);
      const verdict = auc >= aucGoal[0] && auc <= aucGoal[1] ? 'within' : 'OUTSIDE';
      lines.push(`- ${pair.endpoint}, ${pair.a} / ${pair.b}: median ${format(median(times.a), 2)} / ${format(median(times.b), 2)} ms; AUC ${format(auc, 3)} (${verdict} ${aucGoal[0]}–${aucGoal[1]}; ±${format(2 * nullSpread(samples, samples), 3)} is two standard deviations of chance).`);
    }
    bench.print(`Timing: ${samples} interleaved requests a side, each on an address or name of its own, ${pauseMs} ms apart`, lines);
  } finally {
    await service.stop();
  }
}

/** P(a > b) + P(a = b) / 2 over every pair of one sample from each side (the Mann–Whitney U over n·m). */
export function areaUnderCurve(a: number[], b: number[]): number {
  let wins = 0;
  for (const x of a) for (const y of b) wins += x > y ? 1 : x === y ? 0.5 : 0;
  return wins / (a.length * b.length);
}

/** The standard deviation of the AUC when both sides come from one distribution. */
function nullSpread(n: number, m: number): number {
  return Math.sqrt((n + m + 1) / (12 * n * m));
}
