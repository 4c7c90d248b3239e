import { randomBytes, randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckContext } from './context.ts';
import type { Answer } from './probe.ts';
import { fail, pass, skip, type Finding, type Verdict } from './report.ts';

/** Timed pairs per endpoint at most: two dozen requests per address in all. */
export const defaultSamples = 12;
/** With fewer pairs, even two sides that never overlap stay inside the 99.9 % interval. */
const minSamples = 8;
/** Under the service's 60 s cooldown per address: every later request of both addresses is refused alike. */
const windowMs = 45_000;
/** After a window that ran into RATE_LIMIT, a rest buys back requests to time (ten at the default 20 a minute). */
const restMs = 30_000;
/** Headers whose values change by themselves from one answer to the next; their names are still compared. */
const varying = new Set(['date', 'x-request-id', 'retry-after', 'content-length']);
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const endpoints = [
  { path: '/acc/reg/code', body: (email: string) => ({ name: `check-${hex(8)}`, email, pwd: hex(12) }) },
  { path: '/acc/pwd/code', body: (email: string) => ({ email }) },
];

type Window = { path: string; known: Answer[]; stranger: Answer[]; limited: boolean };

/**
 * Code requests for the account's address against a made-up one under example.invalid (RFC 2606:
 * it never resolves, so no mail reaches anyone): the whole answers, the first and the later ones
 * apart, and the timing of the later ones, all refused by the cooldown alike.
 */
export async function checkEnumeration(
  ctx: CheckContext,
  email: string | null,
  samples = defaultSamples,
): Promise<Finding[]> {
  if (email === null) {
    const saw = 'needs --account: code requests for a known address were not compared with made-up ones';
    return [skip('enumeration.answers', saw), skip('enumeration.timing', saw)];
  }
  const windows: Window[] = [];
  for (const { path, body } of endpoints) {
    if (windows.at(-1)?.limited === true && samples >= minSamples) await sleep(restMs);
    const window: Window = { path, known: [], stranger: [], limited: false };
    const stranger = `check-${hex(6)}@example.invalid`;
    const started = performance.now();
    for (let round = 0; round <= samples && performance.now() - started < windowMs; round += 1) {
      // Interleaved, in a random order each round, so that a change in load falls on both sides alike.
      for (const side of randomInt(2) === 0 ? (['known', 'stranger'] as const) : (['stranger', 'known'] as const))
        window[side].push(await send(ctx, window, body(side === 'known' ? email : stranger)));
    }
    windows.push(window);
  }
  return [judgeAnswers(windows), judgeTiming(windows)];
}

/** One request; the deployment's own per-client limit is waited out as it says, and the request sent again. */
async function send(ctx: CheckContext, window: Window, json: unknown): Promise<Answer> {
  for (let tries = 1; ; tries += 1) {
    const answer = await ctx.probe.request('POST', window.path, { json });
    if (answer.status !== 429 || !/:rate-limited$/.test(String(answer.json?.type)) || tries === 5) return answer;
    window.limited = true;
    await sleep(1000 * Number(answer.headers['retry-after'] ?? 5));
  }
}

/** What answers say beyond what varies by itself: status, headers, and the body's keys with its problem type. */
function linesOf(answers: Answer[]): Set<string> {
  return new Set(
    answers.flatMap(({ status, headers, json, text }) => [
      `status ${status}`,
      ...Object.entries(headers).map(([name, value]) => (varying.has(name) ? name : `${name}: ${value}`)),
      ...(json === null ? [text === '' ? 'no body' : 'a body that is not JSON'] : Object.keys(json)),
      ...(json?.type === undefined ? [] : [`type ${String(json.type)}`]),
    ]),
  );
}

function judgeAnswers(windows: Window[]): Finding {
  const check = 'enumeration.answers';
  // A cooldown or daily cap left by an earlier run: the known address has no first request to compare.
  const cooling = windows.filter(({ known }) => /:(too-soon|daily-limit)$/.test(String(known[0]?.json?.type)));
  const notes = cooling.map(({ path, known }) => `${path} not compared: a code was asked for the account's address ` +
    `within the last minute, or 10 times today (run again in ${known[0]!.headers['retry-after']} s)`);
  for (const { path, known, stranger } of windows.filter((window) => !cooling.includes(window))) {
    for (const when of ['first', 'later'] as const) {
      const part = (answers: Answer[]) => linesOf(when === 'first' ? answers.slice(0, 1) : answers.slice(1));
      const [a, b] = [part(known), part(stranger)];
      const only = (x: Set<string>, y: Set<string>) => [...x].filter((line) => !y.has(line)).join('; ') || 'nothing';
      if (only(a, b) === 'nothing' && only(b, a) === 'nothing') continue;
      const saw = `${path}, ${when} request: only the account's address got ${only(a, b)}; a made-up one ${only(b, a)}`;
      return fail(check, saw, 'answer every address alike: find what tells them apart (a proxy rule, a change)');
    }
  }
  // A check that did not compare every endpoint did not pass: it says what it compared, and skips.
  const same = "the same status, headers and body shape for the account's address and a made-up one";
  if (cooling.length > 0) {
    const compared = windows.filter((window) => !cooling.includes(window)).map(({ path }) => path);
    return skip(check, [...(compared.length === 0 ? [] : [`${compared.join(', ')}: ${same}`]), ...notes].join('; '));
  }
  return pass(check, same);
}

function judgeTiming(windows: Window[]): Finding {
  const judged = windows.map(({ path, known, stranger }) => {
    const n = Math.min(known.length, stranger.length) - 1;
    if (n < minSamples) return { verdict: 'skip' as Verdict, saw: `${path}: only ${n} pairs within the cooldown` };
    const { auc, p } = compareTimes(known.slice(1).map((answer) => answer.ms), stranger.slice(1).map((a) => a.ms));
    // Pass while the AUC's 99.9 % interval covers 0.5; fail once even its 99.99 % interval leaves it out.
    const verdict: Verdict = p < 1e-4 ? 'fail' : p < 1e-3 ? 'warn' : 'pass';
    return { verdict, saw: `${path}: AUC ${auc.toFixed(2)}, p = ${p.toPrecision(2)} (${n} + ${n} requests)` };
  });
  const verdict = (['fail', 'warn', 'skip', 'pass'] as const).find((v) => judged.some((one) => one.verdict === v))!;
  const change = {
    fail: "the account's address is answered measurably faster or slower: make every address cost the same work",
    warn: 'a difference, not yet certain: run again, and look for work done for addresses with an account only',
    skip: 'RATE_LIMIT allowed too few requests in the cooldown: run the check alone, or on staging with a higher one',
  };
  const saw = judged.map((one) => one.saw).join('; ');
  return { check: 'enumeration.timing', verdict, saw, change: verdict === 'pass' ? '' : change[verdict] };
}

/** The Mann–Whitney AUC of `a` over `b` (ties count half) and its two-sided p-value, by the normal approximation. */
export function compareTimes(a: number[], b: number[]): { auc: number; p: number } {
  const wins = a.reduce((sum, x) => sum + b.reduce((won, y) => won + (x > y ? 1 : x === y ? 0.5 : 0), 0), 0);
  const auc = wins / (a.length * b.length);
  const z = Math.abs(auc - 0.5) / Math.sqrt((a.length + b.length + 1) / (12 * a.length * b.length));
  // The normal tail by Abramowitz and Stegun 26.2.17, within 7.5e-8.
  const t = 1 / (1 + 0.2316419 * z);
  const poly = t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  return { auc, p: Math.min(1, (2 * poly * Math.exp((-z * z) / 2)) / Math.sqrt(2 * Math.PI)) };
}
