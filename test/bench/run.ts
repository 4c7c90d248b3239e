// npm run bench [-- --quick] [-- --only=decay]: the service against its physical limits, measured
// in one run on one machine. See README "Performance". Nothing here is asserted: it reports.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, scrypt } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { SMTPServer } from 'smtp-server';
import { findSessionAccount, startSession } from '../../src/sessions/sessions.ts';
import { consumeCode, findCodeExpiry, generateCode, hashCode } from '../../src/accounts/one-time-codes.ts';
import { defaultScrypt } from '../../src/config.ts';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src/storage/embedded-db.ts';
import { createLogger } from '../../src/log.ts';
import { accountActiveMail } from '../../src/mail/messages.ts';
import { enqueueMail } from '../../src/mail/outbox.ts';
import { createPasswordHasher } from '../../src/accounts/passwords.ts';
import { activateRegistration } from '../../src/accounts/registrations.ts';
import { createSealer } from '../../src/sealing.ts';
import { createTokenService } from '../../src/sessions/tokens.ts';
import { formatDecay, runDecay } from './decay.ts';
import type { LoadResult, Plan } from './load.ts';

const quick = process.argv.includes('--quick');
const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length);
if (only !== undefined && only !== 'decay') throw new Error(`--only=${only}: only the decay run can run alone`);
const seconds = quick ? 2 : 10;
const fastConnections = 32;
const hashConcurrency = 4;
const hashConnections = hashConcurrency * 2;
const secret = randomBytes(32).toString('base64url');
const root = new URL('../..', import.meta.url).pathname;
const work = await mkdtemp(join(tmpdir(), 'account-service-bench-'));
await chmod(work, 0o755);
const quiet = createLogger('error', () => {});

// --- PostgreSQL and an SMTP sink -----------------------------------------------------------
let embedded: EmbeddedDatabase | null = null;
let adminUrl = process.env.DATABASE_URL ?? '';
if (adminUrl === '') {
  embedded = await startEmbeddedDatabase(work, quiet);
  adminUrl = embedded.url;
}
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
const benchDb = `bench_${randomBytes(4).toString('hex')}`;
await admin.unsafe(`CREATE DATABASE ${benchDb}`);
const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${benchDb}` }).toString();
const smtp = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], logger: false, onData: (stream, _s, done) => (stream.resume(), stream.on('end', () => done())) });
await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
const smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as { port: number }).port}`;

// --- helpers ----------------------------------------------------------------------------------
async function startService(): Promise<{ url: string; child: ChildProcess }> {
  const logFile = join(work, `service-${Date.now()}.log`);
  const { openSync } = await import('node:fs');
  // The compiled build, as production runs it (npm run bench builds first).
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: root,
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, TOKEN_SECRET: secret, SMTP_URL: smtpUrl, PORT: '0', RATE_LIMIT: '0', HASH_CONCURRENCY: String(hashConcurrency) },
    stdio: ['ignore', openSync(logFile, 'w'), 'inherit'],
  });
  for (;;) {
    const match = /"msg":"listening","url":"([^"]+)"/.exec(await readFile(logFile, 'utf8'));
    if (match !== null) return { url: match[1]!, child };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
}

async function load(plan: Omit<Plan, 'seconds'>): Promise<LoadResult> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(root, 'test/bench/load.ts'), JSON.stringify({ ...plan, seconds })], { maxBuffer: 1 << 28 });
  return JSON.parse(stdout) as LoadResult;
}

async function bodiesFile(name: string, items: Array<{ body: string; token?: string }>): Promise<string> {
  const path = join(work, `${name}.jsonl`);
  await writeFile(path, items.map((item) => JSON.stringify(item)).join('\n'));
  return path;
}

const format = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : '-');

type Row = { workload: string; rps: number; p50: number; p99: number; limit: string; limitRps: number; target: number; note?: string };
const rows: Row[] = [];

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function summarise(result: LoadResult, expected: string): { rps: number; p50: number; p99: number; note?: string } {
  const latencies = result.latenciesMs[expected] ?? [];
  const others = Object.entries(result.statuses).filter(([status]) => status !== expected);
  return {
    rps: latencies.length / result.seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    ...(others.length > 0 ? { note: `also ${others.map(([status, count]) => `${count}×${status}`).join(', ')}` } : {}),
  };
}

async function timed(concurrency: number, task: (index: number) => Promise<void>): Promise<{ rps: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const index = next++;
        const sent = performance.now();
        await task(index);
        latencies.push(performance.now() - sent);
      }
    }),
  );
  return { rps: latencies.length / ((performance.now() - started) / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

// --- the service and its seed data ----------------------------------------------------------
const sql = postgres(databaseUrl, { max: 10, onnotice: () => {} });
const passwordHash = await createPasswordHasher(defaultScrypt).hash('bench-password');
const tokens = createTokenService({ secrets: [Buffer.from(secret)], ttlSeconds: 3600, issuer: 'account-service', audience: null });
/** A signed-in session of the account, as a password grant makes it, and its access token. */
const signedIn = async (id: string) => {
  const { sessionId } = await sql.begin((tx) => startSession(tx, id, { address: '127.0.0.1', userAgent: 'bench' }, new Date(), 3600));
  const [row] = await sql`SELECT public_id FROM accounts WHERE id = ${id}`;
  return { publicId: row!.public_id as string, sessionId, token: tokens.issueToken(row!.public_id as string, sessionId, new Date()).token };
};
const seedAccounts = async (prefix: string, count: number) => {
  const rows = Array.from({ length: count }, (_, index) => ({ name: `${prefix}-${index}`, email: `${prefix}-${index}@bench.example`, password_hash: passwordHash, activated_at: new Date() }));
  const ids: string[] = [];
  for (let at = 0; at < rows.length; at += 5000) ids.push(...(await sql`INSERT INTO accounts ${sql(rows.slice(at, at + 5000))} RETURNING id`).map((row) => row.id as string));
  return ids;
};
const seedPending = async (prefix: string, count: number) => {
  const codes = Array.from({ length: count }, generateCode);
  const now = new Date();
  const expires_at = new Date(now.getTime() + 3600_000);
  const rows = codes.map((_, index) => ({ name: `${prefix}-${index}`, email: `${prefix}-${index}@bench.example`, password_hash: passwordHash, expires_at }));
  for (let at = 0; at < rows.length; at += 5000) {
    const ids = (await sql`INSERT INTO accounts ${sql(rows.slice(at, at + 5000))} RETURNING id`).map((row) => row.id as string);
    const codeRows = ids.map((account_id, index) => ({ code_hash: hashCode(codes[at + index]!), purpose: 'registration', account_id, expires_at, created_at: now }));
    await sql`INSERT INTO one_time_codes ${sql(codeRows)}`;
  }
  return codes;
};
// --- decay: does throughput hold up with uptime? A fresh process, so its memory is its own ---
async function decay(): Promise<string> {
  const fresh = await startService();
  try {
    const [account] = await seedAccounts('decay', 1);
    const { token } = await signedIn(account!);
    return formatDecay(await runDecay({ url: fresh.url, pid: fresh.child.pid!, token, ...(quick ? { seconds: 20, windowSeconds: 5 } : {}) }));
  } finally {
    await stop(fresh.child);
  }
}

async function cleanUp(): Promise<void> {
  await sql.end();
  smtp.close();
  await admin.unsafe(`DROP DATABASE ${benchDb} WITH (FORCE)`);
  await admin.end();
  await embedded?.stop();
  await rm(work, { recursive: true, force: true });
}

if (only === 'decay') {
  process.stdout.write(`${await decay()}\n`);
  await cleanUp();
  process.exit(0);
}

const { url, child: service } = await startService();
const [reader] = await seedAccounts('reader', 1);
const changers = await seedAccounts('changer', quick ? 500 : 2000);
const pendingForService = await seedPending('activate', quick ? 20_000 : 60_000);
const pendingForRaw = await seedPending('raw', quick ? 20_000 : 60_000);
let registrationCounter = 0;
const registrations = await bodiesFile('registrations', Array.from({ length: quick ? 2000 : 10_000 }, () => ({ body: JSON.stringify({ name: `new-${registrationCounter}`, email: `new-${registrationCounter++}@bench.example`, pwd: 'bench-password' }) })));

// --- limits -------------------------------------------------------------------------------
const bare = spawn(process.execPath, ['--import', 'tsx', join(root, 'test/bench/bare-server.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
const barePort = await new Promise<number>((resolve) => bare.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()).port as number)));
const bareUrl = `http://127.0.0.1:${barePort}`;
const badBody = JSON.stringify({ name: 'NOT VALID', email: 'nope', pwd: 1 });
const unknownCode = JSON.stringify({ code: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' });
const readerSession = await signedIn(reader!);
const readerToken = readerSession.token;
const bareFor = async (method: string, path: string, body?: string, token?: string) =>
  summarise(await load({ url: bareUrl, method, path, connections: fastConnections, ...(body === undefined ? {} : { body }), ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }) }), '204');

const bare400 = await bareFor('POST', '/acc/reg/code', badBody);
const bare404 = await bareFor('POST', '/acc/reg', unknownCode);
const bareGet = await bareFor('GET', '/acc/me', undefined, readerToken);
await stop(bare);

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, length: number, options: object) => Promise<Buffer>;
const cost = 2 ** defaultScrypt.ln;
const rawScrypt = await timed(hashConcurrency, async () => {
  await scryptAsync('bench-password', randomBytes(16), 32, { N: cost, r: defaultScrypt.r, p: defaultScrypt.p, maxmem: 256 * cost * defaultScrypt.r });
});
// The database reads that the 404 and GET /acc/me paths make, issued directly: what those
// paths could reach if the service added nothing.
const rawCodeRead = await timed(fastConnections, async () => {
  await findCodeExpiry(sql, 'registration', hashCode('ZZZZ-ZZZZ-ZZZZ-ZZZZ'));
});
const rawAccountRead = await timed(fastConnections, async () => {
  await findSessionAccount(sql, readerSession.publicId, readerSession.sessionId, new Date());
});
const sealer = createSealer([Buffer.from(secret)]);
const rawDatabase = await timed(fastConnections, async (index) => {
  const code = pendingForRaw[index % pendingForRaw.length]!;
  await findCodeExpiry(sql, 'registration', hashCode(code));
  await sql.begin(async (tx) => {
    const accountId = await consumeCode(tx, 'registration', hashCode(code), new Date());
    const account = accountId === null ? null : await activateRegistration(tx, accountId, new Date());
    if (account === null) return;
    await enqueueMail(tx, accountActiveMail(account.email, account.name), sealer, new Date());
  });
});

// --- workloads ----------------------------------------------------------------------------
const fast = async (workload: string, limit: typeof bare400, plan: Omit<Plan, 'seconds' | 'url' | 'connections'>, expected: string, read?: { rps: number }) => {
  const result = summarise(await load({ url, connections: fastConnections, ...plan }), expected);
  const versusRead = read === undefined ? undefined : `${format(result.rps / read.rps, 2)} of its raw database read`;
  const note = [result.note, versusRead].filter((part) => part !== undefined).join('; ');
  rows.push({ workload, ...result, ...(note === '' ? {} : { note }), limit: 'bare node:http', limitRps: limit.rps, target: 0.6 });
};
await fast('rejected body (400)', bare400, { method: 'POST', path: '/acc/reg/code', body: badBody }, '400');
await fast('unknown code (404)', bare404, { method: 'POST', path: '/acc/reg', body: unknownCode }, '404', rawCodeRead);
await fast('GET /acc/me (200)', bareGet, { method: 'GET', path: '/acc/me', headers: { authorization: `Bearer ${readerToken}` } }, '200', rawAccountRead);

const activations = await bodiesFile('activations', pendingForService.map((code) => ({ body: JSON.stringify({ code }) })));
rows.push({ workload: 'POST /acc/reg activation (204)', ...summarise(await load({ url, method: 'POST', path: '/acc/reg', connections: fastConnections, bodiesFile: activations }), '204'), limit: 'raw database', limitRps: rawDatabase.rps, target: 0.5 });
rows.push({ workload: 'POST /acc/reg/code registration (204)', ...summarise(await load({ url, method: 'POST', path: '/acc/reg/code', connections: hashConnections, bodiesFile: registrations }), '204'), limit: 'raw scrypt', limitRps: rawScrypt.rps, target: 0.9 });
const login = JSON.stringify({ grant_type: 'password', username: 'reader-0', password: 'bench-password' });
rows.push({ workload: 'POST /auth/token login (200)', ...summarise(await load({ url, method: 'POST', path: '/auth/token', connections: hashConnections, body: login }), '200'), limit: 'raw scrypt', limitRps: rawScrypt.rps, target: 0.9 });
const changerTokens = await Promise.all(changers.map(async (id) => (await signedIn(id)).token));
const changes = await bodiesFile('changes', changerTokens.map((token) => ({ body: JSON.stringify({ old_pwd: 'bench-password', new_pwd: 'bench-password-2' }), token })));
rows.push({ workload: 'PUT /acc/me/pwd change (204)', ...summarise(await load({ url, method: 'PUT', path: '/acc/me/pwd', connections: hashConnections, bodiesFile: changes }), '204'), limit: 'raw scrypt', limitRps: rawScrypt.rps, target: 0.45 });
await stop(service);

// --- enumeration pairs: one request at a time, alternating, so that only the path differs ---
// Accounts whose hashes were made with older (cheaper) scrypt parameters exist before this
// start, so the service wraps them at start-up; the pair times them against unknown users.
const pairs = quick ? 6 : 20;
await seedAccounts('victim', pairs);
const olderParams = { ln: defaultScrypt.ln - 1, r: defaultScrypt.r, p: defaultScrypt.p };
const olderHash = await createPasswordHasher(olderParams).hash('bench-password');
const olderIds = await seedAccounts('older', pairs);
await sql`UPDATE accounts SET password_hash = ${olderHash} WHERE id IN ${sql(olderIds)}`;
const pairService = await startService();
while ((await sql`SELECT count(*)::int AS n FROM accounts WHERE id IN ${sql(olderIds)} AND password_hash = ${olderHash}`)[0]!.n > 0) {
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const median = (values: number[]) => percentile(values, 50);
const timeOne = async (path: string, body: object) => {
  // A pause first, so that the mail a previous request queued is sent before this one is timed.
  await new Promise((resolve) => setTimeout(resolve, 150));
  const sent = performance.now();
  const response = await fetch(new URL(path, pairService.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await response.arrayBuffer();
  return performance.now() - sent;
};
const enumeration: Array<{ pair: string; a: number[]; b: number[] }> = [
  { pair: 'POST /acc/reg/code: address with an account / new address', a: [], b: [] },
  { pair: 'POST /acc/pwd/code: address with an account / new address', a: [], b: [] },
  { pair: 'POST /auth/token: wrong password / unknown user', a: [], b: [] },
  { pair: `POST /auth/token: wrong password on a hash made with ln=${olderParams.ln} (wrapped) / unknown user`, a: [], b: [] },
];
for (let index = 0; index < pairs; index += 1) {
  enumeration[0]!.a.push(await timeOne('/acc/reg/code', { name: `taken-${index}`, email: `victim-${index}@bench.example`, pwd: 'bench-password' }));
  enumeration[0]!.b.push(await timeOne('/acc/reg/code', { name: `fresh-${index}`, email: `fresh-${index}@bench.example`, pwd: 'bench-password' }));
  enumeration[1]!.a.push(await timeOne('/acc/pwd/code', { email: `victim-${index}@bench.example` }));
  enumeration[1]!.b.push(await timeOne('/acc/pwd/code', { email: `nobody-${index}@bench.example` }));
  enumeration[2]!.a.push(await timeOne('/auth/token', { grant_type: 'password', username: `victim-${index}`, password: 'wrong-password' }));
  enumeration[2]!.b.push(await timeOne('/auth/token', { grant_type: 'password', username: `nobody-${index}`, password: 'wrong-password' }));
  enumeration[3]!.a.push(await timeOne('/auth/token', { grant_type: 'password', username: `older-${index}`, password: 'wrong-password' }));
  enumeration[3]!.b.push(await timeOne('/auth/token', { grant_type: 'password', username: `nobody-older-${index}`, password: 'wrong-password' }));
}
await stop(pairService.child);

// --- overload: registrations offered at ten times the hashing capacity (the raw scrypt rate),
// on a fresh process so that its peak memory is this run's alone ---
const overloadRate = Math.ceil(10 * rawScrypt.rps);
const fresh = await startService();
const overloadBodies = await bodiesFile('overload', Array.from({ length: 20_000 }, (_, index) => ({ body: JSON.stringify({ name: `flood-${index}`, email: `flood-${index}@bench.example`, pwd: 'bench-password' }) })));
const overload = await load({ url: fresh.url, method: 'POST', path: '/acc/reg/code', connections: 1_000, ratePerSecond: overloadRate, bodiesFile: overloadBodies });
const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(await readFile(`/proc/${fresh.child.pid}/status`, 'utf8'))?.[1] ?? NaN);
await stop(fresh.child);

// --- report ---------------------------------------------------------------------------------
const lines = [
  `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${seconds} s a workload${quick ? ' (quick)' : ''}, scrypt ln=${defaultScrypt.ln},r=${defaultScrypt.r},p=${defaultScrypt.p}, HASH_CONCURRENCY=${hashConcurrency}`,
  '',
  '| workload | req/s | p50 ms | p99 ms | limit | limit req/s | ratio | target |',
  '|---|---:|---:|---:|---|---:|---:|---:|',
  ...rows.map((row) => {
    const ratio = row.rps / row.limitRps;
    return `| ${row.workload}${row.note === undefined ? '' : ` (${row.note})`} | ${format(row.rps, 0)} | ${format(row.p50)} | ${format(row.p99)} | ${row.limit} | ${format(row.limitRps, 0)} | ${format(ratio, 2)} | ${ratio >= row.target ? '≥' : '<'} ${row.target} |`;
  }),
  '',
  `Limits: bare node:http ${format(bare400.rps, 0)} / ${format(bare404.rps, 0)} / ${format(bareGet.rps, 0)} req/s (p99 ${format(bare400.p99)} ms); raw scrypt ${format(rawScrypt.rps, 1)}/s at concurrency ${hashConcurrency} (p50 ${format(rawScrypt.p50)} ms); raw database activation ${format(rawDatabase.rps, 0)} tx/s with pool 10 (p99 ${format(rawDatabase.p99)} ms); raw database reads: code ${format(rawCodeRead.rps, 0)}/s, account ${format(rawAccountRead.rps, 0)}/s.`,
  ...enumeration.map(({ pair, a, b }) => {
    const ratio = median(a) / median(b);
    return `Enumeration, ${pair}: median ${format(median(a))} / ${format(median(b))} ms over ${pairs} pairs, ratio ${format(ratio, 3)} (${Math.abs(ratio - 1) <= 0.1 ? 'within' : 'outside'} 10 %).`;
  }),
  (() => {
    const served = overload.latenciesMs['204'] ?? [];
    const shed = overload.statuses['503'] ?? 0;
    const bound = hashConcurrency * 32 + 150;
    return `Overload (registrations offered at ${overloadRate}/s, ten times the raw scrypt rate): ${overload.requests} requests, ${format((100 * shed) / overload.requests)} % answered 503, served p99 ${format(percentile(served, 99))} ms and max ${format(Math.max(...served, 0))} ms, peak resident memory ${format(peakKiB / 1024, 0)} MiB (bound ${bound} MiB: ${peakKiB / 1024 <= bound ? 'within' : 'OVER'}).`;
  })(),
];
process.stdout.write(`${lines.join('\n')}\n`);
process.stdout.write(`${await decay()}\n`);
await cleanUp();
