/** What one check found: its verdict, what it saw, and what the operator should change. */
export type Verdict = 'pass' | 'warn' | 'fail' | 'skip';
export type Finding = { check: string; verdict: Verdict; saw: string; change: string };

export const pass = (check: string, saw: string): Finding => ({ check, verdict: 'pass', saw, change: '' });
export const warn = (check: string, saw: string, change: string): Finding => ({
  check,
  verdict: 'warn',
  saw,
  change,
});
export const fail = (check: string, saw: string, change: string): Finding => ({
  check,
  verdict: 'fail',
  saw,
  change,
});
export const skip = (check: string, saw: string, change = ''): Finding => ({ check, verdict: 'skip', saw, change });

/**
 * The checks that fail against a development instance on this machine (npm start) by design: plain
 * http, public metrics, and localhost and 127.0.0.1 (the issuer's and the passkeys' host) told apart.
 */
const failingLocally = new Set([
  'transport.https', 'exposure.metrics', 'issuer.passkeys', 'issuer.metadata', 'issuer.token',
]);

/**
 * Against a loopback address, marks the failures that a local development instance has by design
 * (plain http, a public /metrics, passkeys on localhost), so that they are not taken for faults.
 */
export function markLocal(findings: readonly Finding[], url: URL): Finding[] {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!(host === 'localhost' || host === '::1' || host.startsWith('127.'))) return [...findings];
  return findings.map((finding) => finding.verdict === 'fail' && failingLocally.has(finding.check)
    ? { ...finding, saw: `${finding.saw} (expected against a local development instance)` }
    : finding);
}

/** Only a fail makes the command exit non-zero: a warning is for the operator to judge. */
export function exitCodeOf(findings: readonly Finding[]): number {
  return findings.some((finding) => finding.verdict === 'fail') ? 1 : 0;
}

/** The findings as a table for people: one line each, and what to change on the line below. */
export function formatTable(findings: readonly Finding[]): string {
  const width = Math.max(...findings.map((finding) => finding.check.length), 5);
  const lines = findings.flatMap((finding) => {
    const head = `${finding.verdict.toUpperCase().padEnd(4)}  ${finding.check.padEnd(width)}  ${finding.saw}`;
    const change = finding.change === '' ? [] : [`${' '.repeat(width + 8)}change: ${finding.change}`];
    return [head, ...change];
  });
  const counts = (['pass', 'warn', 'fail', 'skip'] as const)
    .map((verdict) => `${findings.filter((finding) => finding.verdict === verdict).length} ${verdict}`)
    .join(', ');
  const local = findings.filter((finding) => finding.saw.endsWith('(expected against a local development instance)'));
  const count = local.length === 1 ? 'one failure is' : `${local.length} failures are`;
  const note = local.length === 0 ? '' : `; ${count} ` +
    'expected against a local development instance (plain http, localhost and 127.0.0.1 told apart, public ' +
    'metrics), and are faults against a public URL';
  return `${lines.join('\n')}\n\n${counts}${note}\n`;
}
