// The driver defect of README "Driver defects" (postgres 3.4.9, Queue), reproduced with nothing
// but the driver: a pool of 10, 50 concurrent loops of one indexed read, queries a second per
// 5 s interval and their last/first ratio. Usage:
//   DATABASE_URL=postgres://... node --import tsx test/bench/driver-queue.ts [--seconds=20] [--loops=50]
//     [--pool=handle]   the service's handle (src/storage/db.ts: ten driver pools of one connection,
//                       up to four queries each) instead of the bare driver
import postgres from 'postgres';
import { openDatabase } from '../../src/storage/db.ts';

const option = (name: string, fallback: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const seconds = Number(option('seconds', '20'));
const loops = Number(option('loops', '50'));
const interval = 5;
const url = process.env.DATABASE_URL;
if (url === undefined || url === '') throw new Error('set DATABASE_URL');

const database = option('pool', 'driver') === 'handle' ? openDatabase(url) : null;
const sql = database?.sql ?? postgres(url, { max: 10 });
let done = 0;
let running = true;
const loop = async () => {
  // pg_class: an indexed read that needs no table of its own.
  while (running) {
    await sql`select relname from pg_class where oid = ${1259}`;
    done += 1;
  }
};
const rates: number[] = [];
let last = 0;
const ticker = setInterval(() => {
  rates.push((done - last) / interval);
  last = done;
  process.stdout.write(`${rates.length * interval} s: ${Math.round(rates.at(-1)!)} queries/s, rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB, heap ${Math.round(process.memoryUsage().heapUsed / 2 ** 20)} MiB\n`);
  if (rates.length * interval < seconds) return;
  running = false;
  clearInterval(ticker);
}, interval * 1000);
await Promise.all(Array.from({ length: loops }, loop));
process.stdout.write(`${done} queries; last/first interval ${(rates.at(-1)! / rates[0]!).toFixed(2)}\n`);
await (database === null ? sql.end() : database.end());
