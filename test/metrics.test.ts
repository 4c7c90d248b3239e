import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createMetrics } from '../src/metrics.ts';
import { requestCode, startTestService, uniqueUser, type TestService } from './helpers/service.ts';

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
    app = await startTestService();
  });
  after(async () => {
    await app.stop();
  });

  it('reports requests, latency, the outbox, hashing and the pool', async () => {
    await requestCode(app, uniqueUser());
    await app.call('GET', '/nowhere');
    const response = await app.call('GET', '/metrics');
    assert.equal(response.status, 200);
    assert.equal(response.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    const text = response.text;
    assert.match(text, /^http_requests_total\{method="POST",route="\/acc\/reg\/code",status="204"\} 1$/m);
    assert.match(text, /^http_requests_total\{method="GET",route="unmatched",status="404"\} 1$/m);
    assert.match(text, /^http_request_duration_seconds_count\{method="POST",route="\/acc\/reg\/code"\} 1$/m);
    assert.match(text, /^outbox_messages\{state="(pending|sent)"\} 1$/m);
    assert.match(text, /^outbox_messages\{state="failed"\} 0$/m);
    assert.match(text, /^password_hash_running 0$/m);
    assert.match(text, /^password_hash_queued 0$/m);
    assert.match(text, /^database_pool_connections\{state="active"\} [1-9]/m);
    assert.match(text, /^database_pool_max 10$/m);
    assert.match(text, /^database_up 1$/m);
    assert.match(text, /^process_resident_memory_bytes \d+$/m);
  });
});
