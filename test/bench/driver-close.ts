// The driver defect of docs/operations.md "Driver defects" (postgres 3.4.9: a query the driver
// keeps forever), reproduced with nothing but the driver: a pool of one connection, six loops of
// one read pipelined on it, and its backend terminated 60 times, 30-70 ms apart. Then every
// loop must finish within 5 s; the script prints how many never did (0 with the patch that
// operations.md gives; with 3.4.9 as published, every run here left some). Usage:
//   DATABASE_URL=postgres://... node --import tsx test/bench/driver-close.ts
import postgres from 'postgres';

const url = process.env.DATABASE_URL;
if (url === undefined || url === '') throw new Error('set DATABASE_URL');
const sql = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: 'driver-close' } });
const admin = postgres(url, { max: 1, onnotice: () => {} });
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let running = true;
let answered = 0;
let failed = 0;
const loop = async (index: number) => {
  while (running) {
    try {
      await sql`SELECT ${index}::int AS i`;
      answered += 1;
    } catch {
      failed += 1;
    }
  }
};
const loops = Array.from({ length: 6 }, (_, index) => loop(index));
await delay(300);
for (let round = 0; round < 60; round += 1) {
  await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'driver-close'`;
  await delay(30 + Math.random() * 40);
}
await delay(3_000);
running = false;
let finished = 0;
for (const done of loops) void done.then(() => (finished += 1));
await delay(5_000);
process.stdout.write(`${answered} answered, ${failed} failed; ${6 - finished} of 6 loops never settled\n`);
process.exit(finished === 6 ? 0 : 1);
