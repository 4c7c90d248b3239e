// Whether the driver's own `backoff` option could stand in for the handle's breaker
// (docs/performance.md, "The database handle against the driver's options"). 80 queries, 25 ms
// apart, are sent while PostgreSQL is gone, in two ways: its port refused (the server stopped),
// and a listener that accepts and never answers (a pooler or proxy whose server is gone). Each
// goes to the driver alone (ten connections, its default backoff, and `backoff: () => 0`) and to the
// service's handle (storage/db.ts, the default bounds). It prints how many settled within 60 s,
// and the median, 90th percentile and slowest time to settle, in ms. Usage:
//   node --import tsx test/bench/driver-backoff.ts
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import postgres from 'postgres';
import { openDatabase } from '../../src/storage/db.ts';
import { startEmbeddedDatabase } from '../../src/storage/embedded-db.ts';
import { createLogger } from '../../src/telemetry/log.ts';

type Pool = { query(): Promise<unknown>; note(error: unknown): void; end(): void };

const quiet = createLogger('error', () => {});
const work = await mkdtemp(join(tmpdir(), 'account-service-backoff-'));
await chmod(work, 0o755);
let database = await startEmbeddedDatabase(work, quiet);
const port = Number(new URL(database.url).port);
const silent = createServer((socket) => socket.on('data', () => {})).listen(0, '127.0.0.1');
await new Promise((resolve) => silent.once('listening', resolve));
const silentUrl = database.url.replace(/@[^/]+\//, `@127.0.0.1:${(silent.address() as AddressInfo).port}/`);

const driver = (options: { backoff?: (attempt: number) => number }) => (url: string): Pool => {
  const sql = postgres(url, { max: 10, connect_timeout: 2, onnotice: () => {}, ...options });
  return { query: () => sql`SELECT 1`, note: () => {}, end: () => void sql.end({ timeout: 0 }).catch(() => {}) };
};
const handle = (url: string): Pool => {
  const bounds = { statementTimeoutMs: 5_000, lockTimeoutMs: 2_000, queueTimeoutMs: 2_000 };
  const opened = openDatabase(url, { bounds });
  return {
    query: () => opened.sql`SELECT 1`,
    note: (error) => void opened.noteFailure(error),
    end: () => void opened.end().catch(() => {}),
  };
};

async function measure(name: string, make: (url: string) => Pool, refused: boolean): Promise<void> {
  const pool = make(refused ? database.url : silentUrl);
  if (refused) {
    await pool.query();
    await database.stop();
  }
  const times: number[] = [];
  const settled: Promise<void>[] = [];
  for (let sent = 0; sent < 80; sent += 1) {
    const started = performance.now();
    settled.push(pool.query().then(() => {}, pool.note).then(() => void times.push(performance.now() - started)));
    await delay(25);
  }
  await Promise.race([Promise.all(settled), delay(60_000)]);
  times.sort((a, b) => a - b);
  const at = (share: number) => Math.round(times[Math.min(times.length - 1, Math.floor(share * times.length))] ?? NaN);
  const outage = refused ? 'port refused' : 'accepts, never answers';
  process.stdout.write(`| ${outage} | ${name} | ${times.length} of 80 | ${at(0.5)} | ${at(0.9)} | ${at(1)} |\n`);
  pool.end();
  if (refused) database = await startEmbeddedDatabase(work, quiet, port);
}

process.stdout.write('| outage | pool | settled | median | p90 | slowest |\n|---|---|---:|---:|---:|---:|\n');
for (const refused of [true, false]) {
  await measure('the driver, its default backoff', driver({}), refused);
  await measure('the driver, `backoff: () => 0`', driver({ backoff: () => 0 }), refused);
  await measure('the handle (`storage/db.ts`)', handle, refused);
}
silent.close();
await database.stop();
await rm(work, { recursive: true, force: true });
process.exit(0);
