import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';

let app: TestService;
let token: string;
before(async () => {
  app = await startTestService();
  token = (await registerAndSignIn(app)).token;
});
after(async () => {
  await app.stop();
});

/** A small seeded generator (mulberry32), so that every run throws the same bodies. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fieldNames = ['name', 'email', 'pwd', 'phone', 'code', 'old_pwd', 'new_pwd', 'grant_type', 'username', 'password', '__proto__', 'constructor', 'prototype', 'toString', ''];
const oddStrings = ['', ' ', '\u0000', '\ud800', '\udfff', '\u202e', '😀', 'Ω', '\n', 'a'.repeat(7000), '%00', '../../etc/passwd', "'; DROP TABLE accounts; --", '{"a":1}', 'null', 'ABCD-EFGH-IJKL-MNO', '+12 345 678'];

function generate(next: () => number, depth = 0): unknown {
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)]!;
  switch (Math.floor(next() * (depth > 3 ? 5 : 8))) {
    case 0:
      return null;
    case 1:
      return pick([true, false]);
    case 2:
      return pick([0, -1, 1e308, -0, 3.14, 2 ** 53 + 1]);
    case 3:
      return pick(oddStrings);
    case 4:
      return Array.from({ length: Math.floor(next() * 6) }, () => String.fromCharCode(Math.floor(next() * 0xffff))).join('');
    case 5:
      return Array.from({ length: Math.floor(next() * 4) }, () => generate(next, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: Math.floor(next() * 5) }, () => [pick(fieldNames), generate(next, depth + 1)]));
  }
}

function body(next: () => number): string {
  const kind = Math.floor(next() * 10);
  if (kind === 0) return `${'['.repeat(3000)}${']'.repeat(3000)}`;
  if (kind === 1) return JSON.stringify(generate(next)).slice(0, Math.floor(next() * 40));
  if (kind === 2) return `{"__proto__": {"isAdmin": true}, "constructor": {"prototype": {"x": 1}}}`;
  const value = generate(next);
  return JSON.stringify(value) ?? 'undefined';
}

describe('bad input at volume', () => {
  it('answers thousands of generated bodies on every endpoint with a well-formed 4xx and stores nothing', async () => {
    const next = random(20261121);
    const [before] = await app.service.sql`SELECT (SELECT count(*) FROM accounts)::int AS accounts, (SELECT count(*) FROM outbox)::int AS outbox`;
    const endpoints: Array<{ method: string; path: string; auth?: boolean; oauth?: boolean }> = [
      { method: 'POST', path: '/acc/reg/code' },
      { method: 'POST', path: '/acc/reg' },
      { method: 'PUT', path: '/acc/me/pwd', auth: true },
      { method: 'POST', path: '/auth/token', oauth: true },
    ];
    let sent = 0;
    for (let round = 0; round < 600; round += 1) {
      await Promise.all(
        endpoints.map(async (endpoint) => {
          const text = body(next);
          const type = next() < 0.9 ? 'application/json' : 'application/x-www-form-urlencoded';
          const response = await app.call(endpoint.method, endpoint.path, { body: text, headers: { 'content-type': type, ...(endpoint.auth === true ? { authorization: `Bearer ${token}` } : {}) } });
          sent += 1;
          const context = `${endpoint.method} ${endpoint.path} ${text.slice(0, 120)} -> ${response.status} ${response.text.slice(0, 200)}`;
          assert.ok(response.status >= 400 && response.status < 500, context);
          if (endpoint.oauth === true) {
            assert.match(String(response.headers['content-type']), /^application\/json/, context);
            assert.equal(typeof response.json.error, 'string', context);
          } else {
            assert.equal(response.headers['content-type'], 'application/problem+json', context);
            assert.equal(response.json.status, response.status, context);
            assert.match(response.json.type, /^urn:account-service:problem:[a-z-]+$/, context);
            assert.equal(typeof response.json.title, 'string', context);
          }
        }),
      );
    }
    const authHeaders = ['', 'Bearer', 'Bearer ' + 'A'.repeat(4000), 'Bearer a.b.c', 'bearer \u00ff', `Bearer ${token}x`, 'Basic Og=='];
    for (const authorization of authHeaders) assert.equal((await app.call('GET', '/acc/me', { headers: { authorization } })).status, 401, authorization);
    assert.ok(sent >= 2400);
    assert.equal((await app.call('GET', '/healthz')).status, 200, 'the process is alive');
    const [afterwards] = await app.service.sql`SELECT (SELECT count(*) FROM accounts)::int AS accounts, (SELECT count(*) FROM outbox)::int AS outbox`;
    assert.deepEqual(afterwards, before, 'nothing was stored');
    assert.equal(app.logs.some((line) => line.includes('"level":"error"')), false, 'no unexpected error was logged');
  });
});
