import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { buildAdminDocument } from '../../src/admin/api-document.ts';
import { operations } from '../../src/admin/operations.ts';
import { eventsOf, passwordGrant, signedIn } from '../helpers/accounts.ts';
import { createDocumentChecker, type Document } from '../helpers/api-document.ts';
import { call, type CallOptions, type HttpResult } from '../helpers/http.ts';
import { codeIn } from '../helpers/smtp.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { waitUntil } from '../helpers/wait.ts';
import { acceptedEvents, startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';
import { lintApiDocument } from '../tools/lint-openapi.ts';

// The admin API (issue 33): the command's operations over HTTP, on a listener of its own, against
// a running service on a real PostgreSQL, SMTP server and webhook receiver.
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const adminToken = randomBytes(32).toString('base64url');
const document = buildAdminDocument('1.2.3') as unknown as Document;
const checkAgainstDocument = createDocumentChecker(document);
let receiver: Receiver;
let app: TestService;
before(async () => {
  receiver = await startReceiver(secret);
  app = await startTestService({
    env: { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, ADMIN_PORT: '0', ADMIN_TOKEN: adminToken },
    outbox: { maxAttempts: 2, backoffBaseMs: 50 },
    webhooks: { pollMs: 100, maxAttempts: 2, backoffBaseMs: 50, backoffCapMs: 100 },
  });
});
after(async () => {
  await app.stop();
  await receiver.stop();
});

/**
 * One call to the admin listener, with the admin token unless `options` says otherwise; its
 * answer must have `status` and agree with the admin document. `at`: the path, or the path and
 * the document's template of it.
 */
async function api(method: string, at: string | readonly [string, string], status: number, options: CallOptions = {}, schemaRefuses?: boolean): Promise<HttpResult> {
  const [path, template] = typeof at === 'string' ? [at, at.split('?')[0]!] : at;
  const response = await call(app.service.adminUrl!, method, path, { token: adminToken, ...options });
  assert.equal(response.status, status, `${method} ${path}: ${response.text}`);
  checkAgainstDocument(method, template, options, response, schemaRefuses);
  return response;
}
const onAccount = (name: string, action = '') => [`/admin/accounts/${encodeURIComponent(name)}${action}`, `/admin/accounts/{target}${action}`] as const;

describe('the admin listener', () => {
  it('is not there without ADMIN_PORT, and the public port answers 404 to every admin path either way', async () => {
    const plain = await startTestService();
    try {
      assert.equal(plain.service.adminUrl, null);
      assert.notEqual(app.service.adminUrl, null);
      assert.notEqual(app.service.adminUrl, app.url);
      for (const operation of operations) {
        const path = operation.path.replace('{target}', 'someone');
        for (const service of [app, plain]) assert.equal((await service.call(operation.method, path, { token: adminToken, json: {} })).status, 404, `${operation.method} ${path}`);
      }
      const publicDocument = JSON.stringify((await app.call('GET', '/openapi.json')).json);
      assert.equal(publicDocument.includes('/admin'), false, 'the public document names no admin path');
    } finally {
      await plain.stop();
    }
  });

  it('answers only Authorization: Bearer <ADMIN_TOKEN>', async () => {
    const { token } = await registerAndSignIn(app);
    for (const options of [{ token: '' }, { token: 'x'.repeat(adminToken.length) }, { token: adminToken.slice(0, -1) }, { token }, { token: undefined, headers: { authorization: `Basic ${adminToken}` } }]) {
      const refused = await api('GET', '/admin/accounts', 401, options);
      assert.equal(refused.headers['www-authenticate'], 'Bearer realm="admin"');
      assert.equal(refused.json.type, 'urn:account-service:problem:invalid-token');
    }
    await api('GET', '/openapi.json', 401, { token: 'wrong' });
    assert.equal((await call(app.service.adminUrl!, 'GET', '/admin/nothing', { token: adminToken })).status, 404);
    await api('PUT', '/admin/accounts', 405);
  });

  it('serves its OpenAPI document, which lints clean and names every operation of the command', async () => {
    const served = (await api('GET', '/openapi.json', 200)).json;
    assert.deepEqual(served, JSON.parse(JSON.stringify(buildAdminDocument(served.info.version))));
    assert.deepEqual(await lintApiDocument(document), []);
    const documented = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)).sort();
    assert.deepEqual(documented, [...operations.map((operation) => `${operation.method} ${operation.path}`), 'GET /openapi.json'].sort());
  });
});

describe('admin API account actions', () => {
  it('disable refuses every existing token at once and tells the owner an operator acted; enable lets the owner back', async () => {
    const { user, token } = await registerAndSignIn(app);
    const tokens = await signedIn(app, user.name, user.pwd);
    const disable = onAccount(user.email, '/disable');
    await api('POST', disable, 400, { json: {} });
    await api('POST', disable, 400, { json: { reason: ' ' } }, false);
    await api('POST', disable, 400, { json: { reason: 5 } });
    await api('POST', disable, 400, { json: { reason: 'x', force: 'yes' } });
    await api('POST', disable, 400, { body: '{"reason":', headers: { 'content-type': 'application/json' } });
    await api('POST', disable, 415, { body: 'reason=x', headers: { 'content-type': 'text/plain' } });
    const missing = await api('POST', onAccount('nobody-at-all', '/disable'), 404, { json: { reason: 'x' } });
    assert.deepEqual([missing.json.type, missing.json.detail], ['urn:account-service:problem:not-found', 'no account nobody-at-all']);

    assert.deepEqual((await api('POST', disable, 200, { json: { reason: 'chargeback fraud' } })).json, { account: user.email, changed: true, ended: 2 });
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401, 'an existing access token is refused at once');
    assert.equal((await app.call('GET', '/acc/me', { token: tokens.access_token })).status, 401);
    assert.equal((await passwordGrant(app, user.name, user.pwd)).json.error, 'account_disabled');
    const found = (await api('GET', onAccount(user.name), 200)).json;
    assert.deepEqual([found.status, found.disabled_reason, found.live_sessions], ['disabled', 'chargeback fraud', 0]);
    const events = (await api('GET', [`${onAccount(user.name, '/events')[0]}?limit=5`, '/admin/accounts/{target}/events'], 200)).json.events;
    assert.deepEqual(events[0], { ...events[0], type: 'account-disabled', actor: 'operator', reason: 'chargeback fraud', client_address: '127.0.0.1' });

    assert.deepEqual((await api('POST', onAccount(found.id, '/enable'), 200)).json, { account: found.id, changed: true });
    const owner = await signedIn(app, user.name, user.pwd);
    const seen = await eventsOf(app, owner.access_token);
    const disabled = seen.find((event) => event.type === 'account-disabled')!;
    assert.deepEqual(disabled, { type: 'account-disabled', occurred_at: disabled.occurred_at, actor: 'operator', client_address: null, session_id: null }, 'the owner sees that an operator acted, not why nor from where');
    assert.equal(seen.find((event) => event.type === 'signed-in')!.actor, 'client');
    await receiver.waitFor((received) => acceptedEvents(received).some((event) => event.type === 'account.enabled' && event.data.account_id === found.id));
  });

  it('find, list (paged, bounded), end-sessions, reset, unlock, remove-second-factor and delete', async () => {
    const names = [];
    for (let i = 0; i < 3; i++) names.push((await registerAndSignIn(app, uniqueUser('api-listed'))).user.name);
    const first = (await api('GET', '/admin/accounts?limit=2', 200)).json;
    assert.deepEqual(first.accounts.map((account: { name: string }) => account.name), [names[2], names[1]]);
    assert.equal((await api('GET', `/admin/accounts?limit=2&cursor=${first.next}`, 200)).json.accounts[0].name, names[0]);
    for (const query of ['limit=1000', 'limit=0', 'status=gone', 'cursor=nope', 'created-after=yesterday', 'colour=red']) await api('GET', `/admin/accounts?${query}`, 400);
    assert.ok((await api('GET', '/admin/accounts?status=active&created-after=2020-01-01', 200)).json.accounts.length >= 3);
    await api('GET', onAccount('nobody@example.com'), 404);

    const { user, token } = await registerAndSignIn(app);
    assert.deepEqual((await api('POST', onAccount(user.name, '/end-sessions'), 200, { json: { reason: 'ticket 7' } })).json, { account: user.name, ended: 1 });
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401);
    for (let i = 0; i < 6; i++) await passwordGrant(app, user.name, 'wrong-password', { address: '203.0.113.9' });
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.9' })).status, 429);
    assert.deepEqual((await api('POST', onAccount(user.name, '/unlock'), 200)).json, { account: user.name, matched_account: true });
    assert.equal((await passwordGrant(app, user.name, user.pwd, { address: '203.0.113.9' })).status, 200);
    assert.deepEqual((await api('POST', onAccount(user.name, '/remove-second-factor'), 200)).json, { account: user.name, removed: false });

    const before = app.smtp.messages.length;
    await api('POST', onAccount(user.name, '/reset'), 200, { json: { reason: 'taken over' } });
    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Set a new password for your account' && app.smtp.messages.indexOf(message) >= before);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'brand-new-password' } })).status, 204);

    assert.deepEqual((await api('DELETE', onAccount(user.name), 200, { json: { reason: 'asked by mail' } })).json, { account: user.name });
    await api('GET', onAccount(user.name), 404);
    const notice = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your account was deleted');
    assert.match(notice.text, /deleted at \S+ by our operators, with everything it held/);
    assert.doesNotMatch(notice.text, /from the address|admin|127\.0\.0\.1/);
  });
});

describe('admin API outbox and webhooks', () => {
  it('outbox retry delivers a message that failed while the SMTP server was down', async () => {
    const user = uniqueUser('api-smtp-down');
    app.smtp.failFor(user.email, 2, 421);
    await app.call('POST', '/acc/reg/code', { json: user });
    let failed: Array<{ id: string; kind: string }> = [];
    await waitUntil(async () => {
      failed = (await api('GET', '/admin/outbox/failed', 200)).json.failed.filter((entry: { kind: string }) => entry.kind === 'registration-code');
      return failed.length > 0;
    });
    await api('POST', '/admin/outbox/retry', 400, { json: {} }, false);
    await api('POST', '/admin/outbox/retry', 400, { json: { id: 'x1' } });
    await api('POST', '/admin/outbox/retry', 404, { json: { id: '999999' } });
    assert.deepEqual((await api('POST', '/admin/outbox/retry', 200, { json: { id: failed[0]!.id } })).json, { retried: [failed[0]!.id] });
    await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your registration code');
  });

  it('webhooks retry delivers an event that failed while the receiver was down', async () => {
    receiver.mode = 'fail';
    const { user, token } = await registerAndSignIn(app);
    const account = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub as string;
    await api('POST', onAccount(user.name, '/end-sessions'), 200);
    await waitUntil(async () => (await api('GET', '/admin/webhooks/failed?limit=100', 200)).json.failed.some((entry: { account: string }) => entry.account === account));
    receiver.mode = 'ok';
    assert.ok((await api('POST', '/admin/webhooks/retry', 200, { json: { 'all-failed': true } })).json.retried.length >= 1);
    await receiver.waitFor((received) => acceptedEvents(received).some((event) => event.type === 'sessions.revoked' && event.data.account_id === account));
  });
});

describe('the admin log', () => {
  it('logs every call with its operation and outcome, and never the token', async () => {
    const { user } = await registerAndSignIn(app);
    const response = await api('POST', onAccount(user.name, '/end-sessions'), 200, { headers: { 'x-request-id': 'admin-log-check' } });
    assert.equal(response.headers['x-request-id'], 'admin-log-check');
    const lines = app.logs.filter((line) => line.includes('"request_id":"admin-log-check"')).map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => line.msg).sort(), ['operator action', 'request']);
    assert.deepEqual(lines.find((line) => line.msg === 'operator action'), { ...lines.find((line) => line.msg === 'operator action'), operation: 'end-sessions', target: user.name, outcome: 'done' });
    assert.deepEqual(lines.find((line) => line.msg === 'request'), { ...lines.find((line) => line.msg === 'request'), method: 'POST', status: 200 });
    await call(app.service.adminUrl!, 'GET', `/admin/accounts?token=${adminToken}`, { token: adminToken });
    assert.equal(app.logs.some((line) => line.includes(adminToken)), false, 'the token is in no log line');
  });
});
