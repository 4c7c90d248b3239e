// Drives HTTP load with wrk (Debian package `wrk`): a C client on one thread, so that the client
// is never what limits a workload (the bench measures its ceiling to show it).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

export type WrkRequest = { method: string; path: string; headers?: Record<string, string>; body?: string };

export type WrkPlan = {
  url: string;
  connections: number;
  seconds: number;
  /** wrk counts a request as timed out after this long; hashing paths need more than its 2 s default. */
  timeoutSeconds?: number;
} & (
  | { request: WrkRequest }
  /**
   * A fresh request each time, in this order, for paths where each request uses something up (a
   * refresh token, a code). wrk formats them all at start-up, then hands one out per request.
   * Past the last it starts again; `wrapped` in the result says so.
   */
  | { requests: WrkRequest[] }
);

export type WrkResult = {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers with a status of 400 or more. */
  errorStatuses: number;
  /** Connect, read, write errors and timeouts. */
  socketErrors: number;
  /** How many times the fed requests ran out and started again. */
  wrapped: number;
};

const run = promisify(execFile);

export async function hasWrk(): Promise<boolean> {
  return run('wrk', ['-v']).then(
    () => true,
    // wrk -v prints its version and exits 1.
    (error: { stdout?: string }) => (error.stdout ?? '').includes('wrk'),
  );
}

/** Runs wrk with one thread and `connections` keep-alive connections for `seconds`. */
export async function runWrk(plan: WrkPlan, work: string): Promise<WrkResult> {
  const id = randomBytes(6).toString('hex');
  const script = join(work, `wrk-${id}.lua`);
  const args = ['-t1', `-c${plan.connections}`, `-d${Math.max(1, Math.round(plan.seconds))}s`, `--timeout`, `${plan.timeoutSeconds ?? 2}s`, '-s', script, new URL(plan.url).origin];
  if ('request' in plan) {
    await writeFile(script, staticScript(plan.request));
  } else {
    const feed = join(work, `wrk-${id}.tsv`);
    await writeFile(feed, plan.requests.map(feedLine).join('\n'));
    await writeFile(script, fedScript);
    args.push('--', feed);
  }
  const { stdout } = await run('wrk', args, { maxBuffer: 1 << 20 });
  const line = /^WRK_RESULT (.*)$/m.exec(stdout)?.[1];
  if (line === undefined) throw new Error(`wrk printed no result:\n${stdout}`);
  const raw = JSON.parse(line) as Record<string, number>;
  const seconds = raw.duration_us! / 1e6;
  return {
    requests: raw.requests!,
    seconds,
    rps: raw.requests! / seconds,
    p50Ms: raw.p50_us! / 1000,
    p99Ms: raw.p99_us! / 1000,
    errorStatuses: raw.error_statuses!,
    socketErrors: raw.connect! + raw.read! + raw.write! + raw.timeout!,
    wrapped: raw.wrapped!,
  };
}

/** Every script ends by printing one line of JSON, read back by runWrk. */
const report = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local wrapped = 0
  for _, thread in ipairs(threads) do wrapped = wrapped + (thread:get("wrapped") or 0) end
  local e = summary.errors
  io.write(string.format('WRK_RESULT {"requests":%d,"duration_us":%d,"error_statuses":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"p50_us":%.0f,"p99_us":%.0f,"wrapped":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout, latency:percentile(50), latency:percentile(99), wrapped))
end
`;

/** One request, formatted once by wrk: no Lua runs per request. */
function staticScript(request: WrkRequest): string {
  const lines = [`wrk.method = ${luaString(request.method)}`, `wrk.path = ${luaString(request.path)}`];
  if (request.body !== undefined) lines.push(`wrk.body = ${luaString(request.body)}`);
  for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  return `${lines.join('\n')}\n${report}`;
}

/** A line of the feed: method, path, body, then header names and values, separated by tabs. */
function feedLine(request: WrkRequest): string {
  const fields = [request.method, request.path, request.body ?? '', ...Object.entries(request.headers ?? {}).flat()];
  if (fields.some((field) => /[\t\n\r]/.test(field))) throw new Error('a fed request may hold no tab or line break');
  return fields.join('\t');
}

const fedScript = `
local requests = {}
local count = 0
local position = 0
wrapped = 0
function init(args)
  for line in io.lines(args[1]) do
    local fields = {}
    for field in (line .. "\\t"):gmatch("([^\\t]*)\\t") do fields[#fields + 1] = field end
    local headers = { Host = wrk.headers["Host"] }
    for i = 4, #fields - 1, 2 do headers[fields[i]] = fields[i + 1] end
    count = count + 1
    requests[count] = wrk.format(fields[1], fields[2], headers, fields[3] ~= "" and fields[3] or nil)
  end
end
function request()
  position = position + 1
  if position > count then position = 1; wrapped = wrapped + 1 end
  return requests[position]
end
${report}`;

/** A Lua string literal: every byte outside printable ASCII, and quotes and backslashes, escaped. */
function luaString(value: string): string {
  let literal = '"';
  for (const byte of Buffer.from(value)) {
    literal += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${literal}"`;
}
