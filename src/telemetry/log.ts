import type { LogLevel } from '../config/config.ts';

export type LogFields = Record<string, unknown>;
/** What the line logged for every request tells. */
export type RequestEntry = { requestId: string; method: string; path: string; status: number; ms: number };
export type Logger = {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** The line `{"msg":"request", request_id, method, path, status, ms}` at level info, one a request. */
  request(entry: RequestEntry): void;
};

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
/**
 * What a log viewer or a terminal may take as a line break, a control or a change of direction:
 * C0 and C1 controls, DEL, the line and paragraph separators, and bidi controls.
 */
const unsafeInLine = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const escapeCharacter = (character: string) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * The line with each control, separator and bidi character written as its `\u` escape, for
 * the log and the admin command's output. In a line of JSON they occur only inside strings
 * (JSON.stringify escapes C0 itself), where the escape is the same JSON.
 */
export function escapeUnsafeCharacters(line: string): string {
  return line.replace(unsafeInLine, escapeCharacter);
}

/**
 * One JSON object per line, or with `words` (an operator's command at a terminal) one sentence
 * a line: `account-service: error: no account nobody`, the fields after it but a stack. Callers
 * pass only fields that are safe to log: this module cannot know what is secret, so handlers
 * never hand it bodies, headers or credentials.
 */
export function createLogger(
  level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line), words = false,
): Logger {
  const sentence = (at: LogLevel, message: string, fields: LogFields = {}) => {
    const details = Object.entries(fields).filter(([name, value]) => name !== 'stack' && value !== undefined)
      .map(([name, value]) => `${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    const said = `${at === 'info' ? '' : `${at}: `}${message}`;
    return `account-service: ${said}${details.length > 0 ? ` (${details.join(', ')})` : ''}`;
  };
  const emit = (at: LogLevel) => (message: string, fields?: LogFields) => {
    if (rank[at] < rank[level]) return;
    const line = words
      ? sentence(at, message, fields)
      : JSON.stringify(Object.assign({ time: new Date().toISOString(), level: at, msg: message }, fields));
    write(`${escapeUnsafeCharacters(line)}\n`);
  };
  return {
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    request: ({ requestId, method, path, status, ms }) =>
      emit('info')('request', { request_id: requestId, method, path, status, ms }),
  };
}

/** The parts of an unexpected error that help an operator and hold no request data. */
export function describeError(error: unknown): LogFields {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { error: error.message, ...(code === undefined ? {} : { code }), stack: error.stack };
  }
  return { error: String(error) };
}

/**
 * Collects log lines and writes them together once per turn of the event loop: one write
 * call for many lines, instead of one blocking write each (stdout to a file or pipe is
 * synchronous). `flush()` writes what is left, for exit.
 */
export function createBufferedWriter(write: (chunk: string) => void): { write(line: string): void; flush(): void } {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const chunk = pending.join('');
    pending = [];
    write(chunk);
  };
  return {
    write(line) {
      pending.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}
