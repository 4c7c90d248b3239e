// The deployment check's own entry: `node dist/check/main.js URL …` (or `npm run check -- URL …`).
// It talks to a deployment over HTTP only and needs no setting of the service; `main.ts check`
// runs the same.
import { checkUsage, runCheckCommand } from './cli.ts';

const args = process.argv.slice(2);
if (args.length === 0 || args[0] === '--help') {
  process.stdout.write(`usage:\n${checkUsage}`);
  process.exit(args.length === 0 ? 2 : 0);
}
process.exit(await runCheckCommand(args));
