// The enumeration check against deliberately leaky fakes: a check that cannot fail proves nothing.
// (test/check/deployment.test.ts runs it against the real service behind nginx.)
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { compareTimes, checkEnumeration } from '../../src/check/enumeration.ts';
import { createProbe } from '../../src/check/probe.ts';

const known = 'known@example.com';

/** A code endpoint that tells the known address apart: 30 ms slower, or with a 404 for every other one. */
async function startLeakyServer(leak: 'slower' | 'answer'): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const isKnown = (JSON.parse(body) as { email: string }).email === known;
      if (leak === 'answer' && !isKnown && req.url === '/acc/pwd/code') {
        res.writeHead(404, { 'Content-Type': 'application/problem+json' }).end('{"type":"urn:x:no-account"}');
      } else setTimeout(() => res.writeHead(204).end(), leak === 'slower' && isKnown ? 30 : 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

async function checkAgainst(server: Server) {
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const ctx = { url, probe: createProbe(url, { minIntervalMs: 0 }), account: null, expectPublicMetrics: false };
  // 30 pairs: a fail needs an AUC of 0.79 or more, which a busy machine's stalls do not bring down to.
  const findings = await checkEnumeration({ ...ctx, sessions: [] }, known, 30);
  return Object.fromEntries(findings.map((finding) => [finding.check, finding]));
}

describe('the enumeration check', () => {
  const servers: Server[] = [];
  after(() => servers.forEach((server) => server.close()));

  it('fails a deployment that answers the known address 30 ms slower, though its answers agree', async () => {
    servers.push(await startLeakyServer('slower'));
    const found = await checkAgainst(servers.at(-1)!);
    assert.equal(found['enumeration.answers']!.verdict, 'pass', found['enumeration.answers']!.saw);
    assert.equal(found['enumeration.timing']!.verdict, 'fail', found['enumeration.timing']!.saw);
  });

  it('fails a deployment whose reset answer tells a known address from an unknown one', async () => {
    servers.push(await startLeakyServer('answer'));
    const found = await checkAgainst(servers.at(-1)!);
    assert.equal(found['enumeration.answers']!.verdict, 'fail');
    const { saw } = found['enumeration.answers']!;
    assert.match(saw, /^\/acc\/pwd\/code, first request: only the account's address got status 204/, saw);
    assert.match(saw, /; a made-up one status 404/, saw);
  });

  it('skips, saying so, without an address known to have an account', async () => {
    const findings = await checkEnumeration({} as never, null);
    assert.deepEqual(findings.map((finding) => finding.verdict), ['skip', 'skip']);
    assert.match(findings[0]!.saw, /needs --account/);
  });
});

describe('the AUC and its p-value', () => {
  it('is 0 for sides that never overlap (a below b), 0.5 with p = 1 for equal ones, ties counting half', () => {
    const equal = compareTimes([1, 2], [1, 2]);
    assert.ok(equal.auc === 0.5 && Math.abs(equal.p - 1) < 1e-6, `${equal.auc} ${equal.p}`);
    assert.equal(compareTimes([3, 4, 5], [1, 2, 3]).auc, 8.5 / 9);
    assert.equal(compareTimes([1], [2]).auc, 0);
  });

  it('gives the normal approximation: 1.4e-6 for 16 and 16 that never overlap, 0.049 at AUC 0.76 of 10 + 10', () => {
    const high = Array.from({ length: 16 }, (_, i) => 100 + i);
    const low = Array.from({ length: 16 }, (_, i) => i);
    assert.ok(Math.abs(compareTimes(high, low).p - 1.4058e-6) < 1e-8, `z = 4.8242: ${compareTimes(high, low).p}`);
    // Each of a's ten beats k of b's 0…9 (the k below k - 0.5): 76 of the 100 pairs in all.
    const a = [10, 10, 10, 10, 10, 10, 8, 8, 0, 0].map((k) => k - 0.5);
    const { auc, p } = compareTimes(a, [...Array(10).keys()]);
    assert.equal(auc, 0.76);
    assert.ok(Math.abs(p - 0.049366) < 1e-6, `two-sided normal tail of z = 1.9654: ${p}`);
  });
});
