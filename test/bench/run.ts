// npm run bench [-- --quick] [-- --only=throughput,database-cost,timing,footprint,sessions-memory,decay,outage] [-- --workload=refresh] [-- --pairs=passkey]: the service
// against references that do the same work and nothing else, measured in one run on one machine.
// See README "Performance". Nothing here is asserted: it reports.
//
// Each run below is one call: a name for --only, and a function `(bench: Bench) => Promise<void>`
// that starts what it needs through `bench` and prints its own section of the report.
import { cpus } from 'node:os';
import { defaultScrypt } from '../../src/config/config.ts';
import { openBench } from './bench.ts';
import { databaseCost } from './database-cost.ts';
import { enumeration } from './enumeration.ts';
import { footprint } from './footprint.ts';
import { hashing } from './hashing.ts';
import { inProcess } from './in-process.ts';
import { overload } from './overload.ts';
import { throughput } from './throughput.ts';
import { timing } from './timing.ts';
import { sessionsMemory } from './sessions-memory.ts';
import { decay, outage } from './uptime.ts';

const bench = await openBench(process.argv.slice(2));
process.stdout.write(
  `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${bench.seconds} s a run${bench.quick ? ' (quick)' : ''}, scrypt ln=${defaultScrypt.ln},r=${defaultScrypt.r},p=${defaultScrypt.p}, HASH_CONCURRENCY=${bench.hashConcurrency}\n`,
);
try {
  await bench.run('throughput', throughput);
  await bench.run('database-cost', databaseCost);
  await bench.run('in-process', inProcess);
  await bench.run('hashing', hashing);
  await bench.run('enumeration', enumeration);
  await bench.run('timing', timing);
  await bench.run('overload', overload);
  await bench.run('footprint', footprint);
  await bench.run('sessions-memory', sessionsMemory);
  await bench.run('decay', decay);
  await bench.run('outage', outage);
} finally {
  await bench.close();
}
