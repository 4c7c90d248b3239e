import { exitCodeOf, formatTable } from './report.ts';
import { runChecks, type CheckOptions } from './run.ts';

export const checkUsage = `  check URL [--account NAME:PASSWORD] [--json] [--expect-public-metrics]
                            black-box checks of the deployment at its public URL (needs no
                            environment): proxy, TLS, issuer, passkeys, throttles, tokens,
                            exposure, clock, enumeration (with --account); exits 1 on any fail
                            (README, "Checking a deployment")
`;

type Parsed = { url: URL; json: boolean; options: CheckOptions };

/** The command line after `check`, or a message saying what is wrong with it. */
export function parseCheckArgs(args: string[]): Parsed | string {
  const rest = [...args];
  const json = rest.includes('--json');
  const expectPublicMetrics = rest.includes('--expect-public-metrics');
  const accountAt = rest.indexOf('--account');
  const accountArg = accountAt === -1 ? null : rest[accountAt + 1];
  if (accountAt !== -1) rest.splice(accountAt, 2);
  const positional = rest.filter((arg) => arg !== '--json' && arg !== '--expect-public-metrics');
  if (accountArg === undefined || (accountArg !== null && !accountArg.includes(':')))
    return '--account takes NAME:PASSWORD';
  if (positional.length !== 1 || !URL.canParse(positional[0]!))
    return `check takes one URL, got ${positional.join(' ') || 'none'}`;
  const url = new URL(positional[0]!);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the URL must be http(s)';
  const colon = accountArg?.indexOf(':') ?? -1;
  const account =
    accountArg === null ? null : { name: accountArg.slice(0, colon), password: accountArg.slice(colon + 1) };
  return { url, json, options: { account, expectPublicMetrics } };
}

/** `check`: prints the findings (a table, or JSON) on stdout and returns the exit code. */
export async function runCheckCommand(args: string[]): Promise<number> {
  const print = (text: string) => process.stdout.write(text);
  const parsed = parseCheckArgs(args);
  if (typeof parsed === 'string') {
    process.stderr.write(`account-service check: ${parsed}\nUsage:\n${checkUsage}`);
    return 2;
  }
  const findings = await runChecks(parsed.url, parsed.options);
  print(parsed.json ? `${JSON.stringify({ url: parsed.url.href, findings }, null, 2)}\n` : formatTable(findings));
  return exitCodeOf(findings);
}
