/**
 * The arguments of an operator's operation, the same from the command line (`--name value`) and
 * from the admin API (a path parameter, and the JSON body or the query): every operation checks
 * them here, and a bad one is a clear message naming it, never a database error.
 */
export type Args = { target: string | null; options: Record<string, string | true> };

/** A refusal of the arguments: the command exits 2, the admin API answers 400. */
export class ArgumentError extends Error {
  override name = 'ArgumentError';
}

export const maxPageSize = 100;
const maxReasonLength = 500;
/**
 * Printable characters and spaces only: a reason is shown in logs, tickets and webhooks. No
 * controls, format characters (bidi overrides, zero-width), or line and paragraph separators.
 */
const printable = /^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]+$/u;

/** The one operand: an account (name, address or id), an identifier, or a queue entry's id. */
export function target(args: Args, what: string): string {
  if (args.target === null || args.target === '' || args.target.length > 254 || !printable.test(args.target)) {
    throw new ArgumentError(`give the ${what}`);
  }
  return args.target;
}

export function noTarget(args: Args): void {
  if (args.target !== null) throw new ArgumentError(`unexpected argument ${args.target}`);
}

/** Refuses an option the operation does not take, so that a typo is not silently ignored. */
export function onlyOptions(args: Args, allowed: string[]): void {
  const unknown = Object.keys(args.options).find((name) => !allowed.includes(name));
  if (unknown !== undefined) {
    throw new ArgumentError(
      `unknown option --${unknown} (this operation takes ` +
        `${allowed.map((name) => `--${name}`).join(', ') || 'none'})`,
    );
  }
}

export function text(args: Args, name: string): string | null {
  const value = args.options[name];
  if (value === undefined) return null;
  if (value === true || typeof value !== 'string') throw new ArgumentError(`--${name} needs a value`);
  return value;
}

/** The operator's reason: required for some operations, 1 to 500 printable characters. */
export function reason(args: Args, required: boolean): string | null {
  const value = text(args, 'reason');
  if (value === null && required) {
    throw new ArgumentError('give --reason "…": it is recorded with the event and sent with the webhook');
  }
  if (value !== null && (value.trim() === '' || value.length > maxReasonLength || !printable.test(value))) {
    throw new ArgumentError(`--reason must be 1 to ${maxReasonLength} printable characters`);
  }
  return value;
}

export function pageSize(args: Args, fallback = 50): number {
  const value = text(args, 'limit');
  if (value === null) return fallback;
  if (!/^[0-9]{1,3}$/.test(value) || Number(value) < 1 || Number(value) > maxPageSize) {
    throw new ArgumentError(`--limit must be 1 to ${maxPageSize}`);
  }
  return Number(value);
}

export function oneOf<T extends string>(args: Args, name: string, allowed: readonly T[]): T | null {
  const value = text(args, name);
  if (value !== null && !allowed.includes(value as T)) {
    throw new ArgumentError(`--${name} must be one of ${allowed.join(', ')}`);
  }
  return value as T | null;
}

/** A date (2026-01-31) or an ISO 8601 time with its zone. */
export function date(args: Args, name: string): Date | null {
  const value = text(args, name);
  if (value === null) return null;
  const dateOrTime = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;
  // A day that does not exist (2026-02-30) is refused, not rolled over into the next month.
  const day = value.slice(0, 10);
  const valid = dateOrTime.test(value) && !Number.isNaN(Date.parse(value))
    && new Date(`${day}T00:00:00Z`).toISOString().startsWith(day);
  if (!valid) {
    throw new ArgumentError(`--${name} must be a date (2026-01-31) or a time with its zone (2026-01-31T10:00:00Z)`);
  }
  return new Date(value);
}

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A queue entry's id (a positive integer), or every failed one with --all-failed; not both. */
export function retryTarget(args: Args): string | null {
  onlyOptions(args, ['all-failed']);
  const all = args.options['all-failed'] === true || args.options['all-failed'] === 'true';
  if (all === (args.target !== null)) throw new ArgumentError('give one id, or --all-failed');
  if (args.target !== null && !/^[1-9][0-9]{0,17}$/.test(args.target)) {
    throw new ArgumentError('the id must be a positive integer');
  }
  return args.target;
}
