import { escapeUnsafeCharacters } from '../../telemetry/log.ts';
import type { UseCaseDeps } from '../../core/transaction.ts';
import { ArgumentError, type Args } from './arguments.ts';
import { operations, type Operation } from './operations.ts';

/** The exit codes of `admin …`: done, an unknown account or entry, bad arguments. */
export const exitCodes = { done: 0, notFound: 1, usage: 2 } as const;

/** Where the command's events say the operator acted from: it has no network address. */
export const commandAddress = 'admin-command';

export const adminUsage = operations
  .map((operation) => {
    const options = operation.options.map((name) => optionWord(operation, name));
    return `  admin ${[...operation.words, ...targetWord(operation), ...options].join(' ')}`;
  })
  .join('\n');

function optionWord(operation: Operation, name: string): string {
  const word = `--${name}${name === 'all-failed' ? '' : ' …'}`;
  return operation.required?.includes(name) === true ? word : `[${word}]`;
}

function targetWord(operation: Operation): string[] {
  if (operation.words.at(-1) === 'retry') return ['ID|--all-failed'];
  return operation.path.includes('{target}') ? ['ACCOUNT'] : [];
}

/** Splits `words… [operand] [--name value | --flag]…`; --json is the command's own. */
export function parseCommand(argv: string[]): { operation: Operation; args: Args; json: boolean } {
  const operation = operations
    .filter((candidate) => candidate.words.every((word, index) => argv[index] === word))
    .sort((a, b) => b.words.length - a.words.length)[0];
  if (operation === undefined) throw new ArgumentError(`unknown admin command: ${argv.join(' ') || '(none)'}`);
  const rest = argv.slice(operation.words.length);
  const args: Args = { target: null, options: {} };
  let json = false;
  for (let index = 0; index < rest.length; index++) {
    const arg = rest[index]!;
    if (arg === '--json') json = true;
    else if (arg === '--all-failed') args.options['all-failed'] = true;
    else if (arg.startsWith('--')) {
      const value = rest[++index];
      if (value === undefined) throw new ArgumentError(`${arg} needs a value`);
      args.options[arg.slice(2)] = value;
    } else if (args.target === null) args.target = arg;
    else throw new ArgumentError(`unexpected argument ${arg}`);
  }
  return { operation, args, json };
}

/**
 * Runs `admin …` (argv after `admin`) and returns the exit code. The result goes to `print`
 * (stdout): one JSON line with --json, else readable lines; refusals go to `fail` (stderr).
 */
export async function runAdminCommand(
  deps: UseCaseDeps, argv: string[], print: (line: string) => void, fail: (line: string) => void,
): Promise<number> {
  // Values a stranger typed (a phone number's \s may be CR or U+2028) reach the operator's
  // terminal: a control character could move the cursor, a bidi control reorder the line.
  const show = (line: string) => print(escapeUnsafeCharacters(line));
  const showError = (line: string) => fail(escapeUnsafeCharacters(line));
  let parsed;
  try {
    parsed = parseCommand(argv);
    const result = await parsed.operation.run(deps, parsed.args, commandAddress);
    if (result.outcome === 'not-found') {
      showError(result.message);
      if (parsed.json) show(JSON.stringify({ error: 'not-found', message: result.message }));
      return exitCodes.notFound;
    }
    for (const line of parsed.json ? [JSON.stringify(result.body)] : readable(result.body)) show(line);
    return exitCodes.done;
  } catch (error) {
    if (!(error instanceof ArgumentError)) throw error;
    showError(`${error.message} (--help lists the admin commands)`);
    if (parsed?.json === true || argv.includes('--json')) {
      show(JSON.stringify({ error: 'usage', message: error.message }));
    }
    return exitCodes.usage;
  }
}

/** `name: value` lines; a list is one line per entry. */
function readable(body: unknown, indent = ''): string[] {
  const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null;
  const oneLine = (entry: unknown) => isObject(entry)
    ? Object.entries(entry).map(([key, value]) => `${key}=${JSON.stringify(value)}`).join(' ')
    : String(entry);
  if (Array.isArray(body)) {
    return body.length === 0 ? [`${indent}(none)`] : body.map((entry) => indent + oneLine(entry));
  }
  if (!isObject(body)) return [indent + String(body)];
  return Object.entries(body).flatMap(([key, value]) => isObject(value)
    ? [`${indent}${key}:`, ...readable(value, `${indent}  `)]
    : [`${indent}${key}: ${value === null ? '-' : String(value)}`]);
}
