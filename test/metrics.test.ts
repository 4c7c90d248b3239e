import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createMetrics } from '../src/telemetry/metrics.ts';
import { waitUntil } from './helpers/wait.ts';
import { registerAndSignIn, requestCode, startTestService, uniqueUser, type TestService } from './helpers/service.ts';

describe('createMetrics', () => {
  it('counts requests and fills latency buckets cumulatively', () => {
    const metrics = createMetrics();
    metrics.observe('GET', '/healthz', 200, 0.003);
    metrics.observe('GET', '/healthz', 200, 0.2);
    metrics.observe('BREW', 'unmatched', 404, 0.001);
    const text = metrics.render([{ name: 'things', help: 'Things.', samples: [{ labels: { kind: 'a"b' }, value: 2 }, { value: 1 }] }]);
    assert.match(text, /^http_requests_total\{method="GET",route="\/healthz",status="200"\} 2$/m);
    assert.match(text, /^http_requests_total\{method="OTHER",route="unmatched",status="404"\} 1$/m, 'unknown methods share one label');
    assert.match(text, /^http_request_duration_seconds_bucket\{method="GET",route="\/healthz",le="0.005"\} 1$/m);
    assert.match(text, /^http_request_duration_seconds_bucket\{method="GET",route="\/healthz",le="0.25"\} 2$/m);
    assert.match(text, /^http_request_duration_seconds_bucket\{method="GET",route="\/healthz",le="\+Inf"\} 2$/m);
    assert.match(text, /^http_request_duration_seconds_count\{method="GET",route="\/healthz"\} 2$/m);
    assert.match(text, /^# TYPE things gauge$/m);
    assert.match(text, /^things\{kind="a\\"b"\} 2$/m);
    assert.match(text, /^things 1$/m);
    assert.ok(text.endsWith('\n'));
  });
});

describe('GET /metrics', () => {
  let app: TestService;
  before(async () => {
    app = await startTestService({ env: { METRICS_TOKEN: 'metrics-token-0123456789' } });
  });
  after(async () => {
    await app.stop();
  });

  it('needs METRICS_TOKEN when it is set', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: 'Basic bWV0cmljcw==' }] as Array<Record<string, string>>) {
      const refused = await app.call('GET', '/metrics', { headers });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers['www-authenticate'], 'Bearer realm="metrics"');
    }
  });

  it('reports requests, latency, the outbox, sessions, hashing and the pool', async () => {
    await requestCode(app, uniqueUser());
    await app.call('GET', '/nowhere');
    const response = await app.call('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } });
    assert.equal(response.status, 200);
    assert.equal(response.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    const text = response.text;
    assert.match(text, /^http_requests_total\{method="POST",route="\/acc\/reg\/code",status="204"\} 1$/m);
    assert.match(text, /^http_requests_total\{method="GET",route="unmatched",status="404"\} 1$/m);
    assert.match(text, /^http_request_duration_seconds_count\{method="POST",route="\/acc\/reg\/code"\} 1$/m);
    assert.match(text, /^outbox_messages\{state="pending"\} [01]$/m);
    assert.doesNotMatch(text, /^outbox_messages\{state="sent"\}/m, 'sent mail is not counted: each scrape would read a week of it');
    assert.match(text, /^outbox_messages\{state="failed"\} 0$/m);
    assert.match(text, /^sessions_active 0$/m);
    assert.match(text, /^password_hash_running 0$/m);
    assert.match(text, /^password_hash_queued 0$/m);
    assert.match(text, /^database_pool_connections\{state="active"\} [1-9]/m);
    assert.match(text, /^database_pool_max 10$/m);
    assert.match(text, /^database_up 1$/m);
    assert.match(text, /^process_resident_memory_bytes \d+$/m);
  });

  it('counts live sessions at the minutely sweep, not at each scrape', async () => {
    const scrape = async () => Number(/^sessions_active (\d+)$/m.exec((await app.call('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } })).text)![1]);
    const before = await scrape();
    await registerAndSignIn(app);
    assert.equal(await scrape(), before, 'as the sweep last counted');
    await app.service.sweep();
    assert.equal(await scrape(), before + 1);
  });

  it('counts the mail given up on', async () => {
    const user = uniqueUser();
    app.smtp.failFor(user.email, 1, 550);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: user })).status, 204);
    const failed = async () => /^outbox_messages\{state="failed"\} (\d+)$/m.exec((await app.call('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } })).text)?.[1];
    await waitUntil(async () => (await failed()) === '1');
  });
});

describe('GET /metrics without METRICS_TOKEN', () => {
  it('is public, leaves out the gauges that move with single accounts and the latencies, and asks the database nothing', async () => {
    const statements: string[] = [];
    const app = await startTestService({ onQuery: (text) => statements.push(text) });
    try {
      await requestCode(app, uniqueUser());
      // The outbox and request workers poll the same pool: only a scrape's own statements count.
      const own = () => statements.filter((text) => !/outbox|_requests|^(begin|commit)$/i.test(text.trim()) || /count\(\*\)/.test(text));
      const before = own().length;
      const response = await app.call('GET', '/metrics');
      assert.equal(own().length, before, `a public scrape ran: ${own().slice(before).join('; ')}`);
      assert.equal(response.status, 200);
      assert.doesNotMatch(response.text, /^outbox_messages/m, 'mail queued per address would tell which addresses have accounts');
      assert.doesNotMatch(response.text, /^sessions_active/m);
      assert.doesNotMatch(response.text, /^http_request_duration_seconds/m, 'latency sums would give strangers server-side timings');
      assert.match(response.text, /^http_requests_total\{method="POST",route="\/acc\/reg\/code",status="204"\} 1$/m);
      assert.match(response.text, /^database_up 1$/m);
    } finally {
      await app.stop();
    }
  });
});
