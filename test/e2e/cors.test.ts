import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

describe('CORS', () => {
  let open: TestService;
  let closed: TestService;
  before(async () => {
    open = await startTestService({ env: { CORS_ORIGINS: 'https://app.example.com, http://localhost:3000' } });
    closed = await startTestService();
  });
  after(async () => {
    await open.stop();
    await closed.stop();
  });
  const preflight = (app: TestService, origin: string, method = 'PUT') =>
    app.call('OPTIONS', '/acc/me/pwd', { headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' } });

  it('answers a preflight from an allowed origin', async () => {
    const response = await preflight(open, 'https://app.example.com');
    assert.equal(response.status, 204);
    assert.equal(response.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(response.headers['access-control-allow-methods'], 'PUT');
    assert.equal(response.headers['access-control-allow-headers'], 'Authorization, Content-Type, X-Request-Id');
    assert.equal(response.headers['access-control-max-age'], '600');
    assert.equal(response.headers['access-control-allow-credentials'], undefined);
    assert.equal(response.headers.vary, 'Origin');
  });

  it('refuses a preflight from another origin or for another method', async () => {
    const foreign = await preflight(open, 'https://evil.example.com');
    assert.equal(foreign.status, 405);
    assert.equal(foreign.headers['access-control-allow-origin'], undefined);
    const method = await preflight(open, 'https://app.example.com', 'DELETE');
    assert.equal(method.status, 405);
    assert.equal(method.headers['access-control-allow-methods'], undefined);
  });

  it('allows an allowed origin to read answers, errors included', async () => {
    const ok = await open.call('POST', '/acc/reg/code', { json: uniqueUser(), headers: { origin: 'http://localhost:3000' } });
    assert.equal(ok.status, 204);
    assert.equal(ok.headers['access-control-allow-origin'], 'http://localhost:3000');
    assert.equal(ok.headers['access-control-expose-headers'], 'Retry-After, WWW-Authenticate, X-Request-Id');
    const error = await open.call('GET', '/acc/me', { headers: { origin: 'https://app.example.com' } });
    assert.equal(error.status, 401);
    assert.equal(error.headers['access-control-allow-origin'], 'https://app.example.com');
    const other = await open.call('GET', '/healthz', { headers: { origin: 'https://evil.example.com' } });
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    assert.equal(other.headers.vary, 'Origin');
  });

  it('opens nothing when CORS_ORIGINS is unset', async () => {
    const response = await preflight(closed, 'https://app.example.com');
    assert.equal(response.status, 405);
    assert.equal(response.headers.allow, 'PUT');
    const simple = await closed.call('GET', '/healthz', { headers: { origin: 'https://app.example.com' } });
    assert.equal(simple.headers['access-control-allow-origin'], undefined);
    assert.equal(simple.headers.vary, undefined);
  });
});
