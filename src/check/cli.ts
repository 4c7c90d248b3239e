import { createInterface } from 'node:readline';
import type { Account } from './context.ts';
import { exitCodeOf, formatTable, markLocal } from './report.ts';
import { runChecks } from './run.ts';

export const checkUsage = `  check URL [--account NAME] [--json] [--expect-public-metrics]
                            black-box checks of the deployment at its public URL (needs no
                            environment): proxy, TLS, issuer, passkeys, throttles, tokens,
                            exposure, clock, enumeration (with --account, whose password is read
                            from CHECK_PASSWORD, else from standard input); exits 1 on any fail
                            (README, "Checking a deployment")
`;

type Parsed = { url: URL; json: boolean; accountName: string | null; expectPublicMetrics: boolean };

const passwordSources = 'give the password in CHECK_PASSWORD or on standard input';

/** The command line after `check`, or a message saying what is wrong with it. */
export function parseCheckArgs(args: string[]): Parsed | string {
  const rest = [...args];
  const json = rest.includes('--json');
  const expectPublicMetrics = rest.includes('--expect-public-metrics');
  const accountAt = rest.indexOf('--account');
  const accountName = accountAt === -1 ? null : rest[accountAt + 1];
  if (accountAt !== -1) rest.splice(accountAt, 2);
  const positional = rest.filter((arg) => arg !== '--json' && arg !== '--expect-public-metrics');
  if (accountName === undefined || accountName === '') return `--account takes NAME; ${passwordSources}`;
  // A password in argv is seen by ps and kept in shell history; names never hold a colon.
  if (accountName?.includes(':') === true) {
    const seen = 'ps and shell history see the command line';
    return `--account takes NAME alone, not NAME:PASSWORD (${seen}); ${passwordSources}`;
  }
  if (positional.length !== 1 || !URL.canParse(positional[0]!))
    return `check takes one URL, got ${positional.join(' ') || 'none'}`;
  const url = new URL(positional[0]!);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the URL must be http(s)';
  return { url, json, accountName, expectPublicMetrics };
}

/**
 * The account of `--account NAME`: its password from CHECK_PASSWORD, else the first line of
 * `input` (a pipe or a file, never a terminal, which would show it as typed); a message if
 * neither gives one, null without --account.
 */
export async function checkAccount(
  name: string | null, env: NodeJS.ProcessEnv, input: NodeJS.ReadableStream & { isTTY?: boolean },
): Promise<Account | null | string> {
  if (name === null) return null;
  const missing = `no password for ${name}: ${passwordSources} (a pipe or a file, not the terminal)`;
  if (env.CHECK_PASSWORD !== undefined && env.CHECK_PASSWORD !== '') return { name, password: env.CHECK_PASSWORD };
  if (input.isTTY === true) return missing;
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    lines.close();
    return line === '' ? missing : { name, password: line };
  }
  return missing;
}

/** `check`: prints the findings (a table, or JSON) on stdout and returns the exit code. */
export async function runCheckCommand(args: string[]): Promise<number> {
  const print = (text: string) => process.stdout.write(text);
  const parsed = parseCheckArgs(args);
  if (typeof parsed === 'string') {
    process.stderr.write(`account-service check: ${parsed}\nUsage:\n${checkUsage}`);
    return 2;
  }
  const account = await checkAccount(parsed.accountName, process.env, process.stdin);
  if (typeof account === 'string') {
    process.stderr.write(`account-service check: ${account}\n`);
    return 2;
  }
  const checked = await runChecks(parsed.url, { account, expectPublicMetrics: parsed.expectPublicMetrics });
  const findings = markLocal(checked, parsed.url);
  print(parsed.json ? `${JSON.stringify({ url: parsed.url.href, findings }, null, 2)}\n` : formatTable(findings));
  return exitCodeOf(findings);
}
