import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { readApiDocument } from '../../src/http/api-document.ts';
import { operations } from '../../src/features/operators/operations.ts';
import { problemTypePrefix } from '../../src/http/errors.ts';
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
const document = readApiDocument('admin-openapi.json') as unknown as Document;
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
async function api(
  method: string,
  at: string | readonly [string, string],
  status: number,
  options: CallOptions = {},
  schemaRefuses?: boolean,
): Promise<HttpResult> {
  const [path, template] = typeof at === 'string' ? [at, at.split('?')[0]!] : at;
  const response = await call(app.service.adminUrl!, method, path, { token: adminToken, ...options });
  assert.equal(response.status, status, `${method} ${path}: ${response.text}`);
  checkAgainstDocument(method, template, options, response, schemaRefuses);
  return response;
}
/** The body of a 200 answer of `api`. */
const done = async (method: string, at: string | readonly [string, string], options: CallOptions = {}) =>
  (await api(method, at, 200, options)).json;
/** An account's path and its template. */
const onAccount = (name: string, action = '') =>
  [`/admin/accounts/${encodeURIComponent(name)}${action}`, `/admin/accounts/{target}${action}`] as const;
function webhookSent(type: string, account: string) {
  const sent = (event: { type: string; data: Record<string, unknown> }) =>
    event.type === type && event.data.account_id === account;
  return receiver.waitFor((got) => acceptedEvents(got).some(sent));
}

describe('the admin listener', () => {
  it('is not there without ADMIN_PORT, and the public port answers 404 to every admin path either way', async () => {
    const plain = await startTestService();
    try {
      assert.equal(plain.service.adminUrl, null);
      assert.notEqual(app.service.adminUrl, null);
      assert.notEqual(app.service.adminUrl, app.url);
      for (const { method, path: template } of operations) {
        const path = template.replace('{target}', 'someone');
        for (const service of [app, plain]) {
          const answer = await service.call(method, path, { token: adminToken, json: {} });
          assert.equal(answer.status, 404, `${method} ${path}`);
        }
      }
      const publicDocument = JSON.stringify((await app.call('GET', '/openapi.json')).json);
      assert.equal(publicDocument.includes('/admin'), false, 'the public document names no admin path');
    } finally {
      await plain.stop();
    }
  });

  it('answers only Authorization: Bearer <ADMIN_TOKEN>', async () => {
    const { token } = await registerAndSignIn(app);
    const basic = { token: undefined, headers: { authorization: `Basic ${adminToken}` } };
    const twice = { token: undefined, headers: { authorization: [`Bearer ${adminToken}`, `Bearer ${adminToken}`] } };
    const lookalikes = [{ token: 'x'.repeat(adminToken.length) }, { token: adminToken.slice(0, -1) }];
    const wrong = [{ token: '' }, ...lookalikes, { token }, basic, twice];
    for (const options of wrong) {
      const refused = await api('GET', '/admin/accounts', 401, options);
      assert.equal(refused.headers['www-authenticate'], 'Bearer realm="admin"');
      assert.equal(refused.json.type, 'urn:account-service:problem:invalid-token');
    }
    await api('GET', '/openapi.json', 401, { token: 'wrong' });
    assert.equal((await call(app.service.adminUrl!, 'GET', '/admin/nothing', { token: adminToken })).status, 404);
    await api('PUT', '/admin/accounts', 405);
  });

  it('serves its OpenAPI document, which lints clean and names every operation of the command', async () => {
    const served = await done('GET', '/openapi.json');
    assert.deepEqual(served, document, 'the file as it is');
    assert.deepEqual(await lintApiDocument(document), []);
    const operationsOf = ([path, methods]: [string, object]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`);
    const documented = Object.entries(document.paths).flatMap(operationsOf);
    const expected = [...operations.map((operation) => `${operation.method} ${operation.path}`), 'GET /openapi.json'];
    assert.deepEqual(documented.sort(), expected.sort());
  });
});

describe('admin API account actions', () => {
  it('disable refuses every token at once and tells the owner that an operator acted; enable undoes it', async () => {
    const { user, token } = await registerAndSignIn(app);
    const tokens = await signedIn(app, user.name, user.pwd);
    const disable = onAccount(user.email, '/disable');
    await api('POST', disable, 400, { json: {} });
    await api('POST', disable, 400, { json: { reason: ' ' } }, false);
    for (const unprintable of ['x\u2028y', '\u202eabc', '\u200b', '\ufeffx', 'a\u0085b']) {
      await api('POST', disable, 400, { json: { reason: unprintable } }, false);
    }
    await api('POST', disable, 400, { json: { reason: 5 } });
    await api('POST', disable, 400, { json: { reason: 'x', force: 'yes' } });
    await api('POST', disable, 400, { body: '{"reason":', headers: { 'content-type': 'application/json' } });
    await api('POST', disable, 415, { body: 'reason=x', headers: { 'content-type': 'text/plain' } });
    const missing = (await api('POST', onAccount('nobody-at-all', '/disable'), 404, { json: { reason: 'x' } })).json;
    assert.deepEqual([missing.type, missing.detail], [`${problemTypePrefix}not-found`, 'no account nobody-at-all']);

    const disabled = await done('POST', disable, { json: { reason: 'chargeback fraud' } });
    assert.deepEqual(disabled, { account: user.email, changed: true, ended: 2 });
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401, 'an access token is refused at once');
    assert.equal((await app.call('GET', '/acc/me', { token: tokens.access_token })).status, 401);
    assert.equal((await passwordGrant(app, user.name, user.pwd)).json.error, 'account_disabled');
    const found = await done('GET', onAccount(user.name));
    assert.deepEqual([found.status, found.disabled_reason, found.live_sessions], ['disabled', 'chargeback fraud', 0]);
    const [events, template] = onAccount(user.name, '/events');
    const [latest] = (await done('GET', [`${events}?limit=5`, template])).events;
    const [reason, localhost] = ['chargeback fraud', '127.0.0.1'];
    const byOperator = { type: 'account-disabled', actor: 'operator', reason, client_address: localhost };
    assert.deepEqual(latest, { ...latest, ...byOperator });

    assert.deepEqual(await done('POST', onAccount(found.id, '/enable')), { account: found.id, changed: true });
    const seen = await eventsOf(app, (await signedIn(app, user.name, user.pwd)).access_token);
    const shown = seen.find((event) => event.type === 'account-disabled')!;
    const { occurred_at: _, ...told } = shown;
    const expected = { type: 'account-disabled', actor: 'operator', client_address: null, session_id: null };
    assert.deepEqual(told, expected, 'the owner sees that an operator acted, not why nor from where');
    assert.equal(seen.find((event) => event.type === 'signed-in')!.actor, 'client');
    await webhookSent('account.enabled', found.id);
  });

  it('find, list (paged, bounded), end-sessions, reset, unlock, remove-second-factor and delete', async () => {
    const names = [];
    for (let i = 0; i < 3; i++) names.push((await registerAndSignIn(app, uniqueUser('api-listed'))).user.name);
    const first = await done('GET', '/admin/accounts?limit=2');
    assert.deepEqual(first.accounts.map((account: { name: string }) => account.name), [names[2], names[1]]);
    assert.equal((await done('GET', `/admin/accounts?limit=2&cursor=${first.next}`)).accounts[0].name, names[0]);
    const refused = [
      'limit=1000', 'limit=0', 'status=gone', 'cursor=nope', 'created-after=yesterday', 'colour=red',
      'created-after=2026-02-30', 'created-before=2026-04-31T10:00:00Z', 'limit=1&limit=2',
    ];
    for (const query of refused) {
      await api('GET', `/admin/accounts?${query}`, 400);
    }
    assert.ok((await done('GET', '/admin/accounts?status=active&created-after=2020-01-01')).accounts.length >= 3);
    await api('GET', onAccount('nobody@example.com'), 404);

    const { user, token } = await registerAndSignIn(app);
    const named = (result: object) => ({ account: user.name, ...result });
    const ended = await done('POST', onAccount(user.name, '/end-sessions'), { json: { reason: 'ticket 7' } });
    assert.deepEqual(ended, named({ ended: 1 }));
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401);
    const away = { address: '203.0.113.9' };
    for (let i = 0; i < 6; i++) await passwordGrant(app, user.name, 'wrong-password', away);
    assert.equal((await passwordGrant(app, user.name, user.pwd, away)).status, 429);
    assert.deepEqual(await done('POST', onAccount(user.name, '/unlock')), named({ matched_account: true }));
    assert.equal((await passwordGrant(app, user.name, user.pwd, away)).status, 200);
    assert.deepEqual(await done('POST', onAccount(user.name, '/remove-second-factor')), named({ removed: false }));

    const before = app.smtp.messages.length;
    await done('POST', onAccount(user.name, '/reset'), { json: { reason: 'taken over' } });
    const subject = 'Set a new password for your account';
    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === subject);
    assert.ok(app.smtp.messages.indexOf(mail) >= before);
    const reset = await app.call('POST', '/acc/pwd', { json: { code: codeIn(mail), new_pwd: 'brand-new-password' } });
    assert.equal(reset.status, 204);

    assert.deepEqual(await done('DELETE', onAccount(user.name), { json: { reason: 'asked by mail' } }), named({}));
    await api('GET', onAccount(user.name), 404);
    const notice = await app.smtp.waitFor((message) => message.to === user.email && /deleted/.test(message.subject));
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
      const listed: Array<{ id: string; kind: string }> = (await done('GET', '/admin/outbox/failed')).failed;
      failed = listed.filter((entry) => entry.kind === 'registration-code');
      return failed.length > 0;
    });
    await api('POST', '/admin/outbox/retry', 400, { json: {} }, false);
    await api('POST', '/admin/outbox/retry', 400, { json: { id: 'x1' } });
    await api('POST', '/admin/outbox/retry', 404, { json: { id: '999999' } });
    const { id } = failed[0]!;
    assert.deepEqual(await done('POST', '/admin/outbox/retry', { json: { id } }), { retried: [id] });
    await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your registration code');
  });

  it('webhooks retry delivers an event that failed while the receiver was down', async () => {
    receiver.mode = 'fail';
    const { user } = await registerAndSignIn(app);
    const { id } = await done('GET', onAccount(user.name));
    await done('POST', onAccount(user.name, '/end-sessions'));
    const failed = async (): Promise<Array<{ account: string }>> =>
      (await done('GET', '/admin/webhooks/failed?limit=100')).failed;
    await waitUntil(async () => (await failed()).some((entry) => entry.account === id));
    receiver.mode = 'ok';
    assert.ok((await done('POST', '/admin/webhooks/retry', { json: { 'all-failed': true } })).retried.length >= 1);
    await webhookSent('sessions.revoked', id);
  });
});

describe('the admin log', () => {
  it("names the account by its public id, never by the address or name the operator gave", async () => {
    const { user } = await registerAndSignIn(app);
    const { id } = await done('GET', onAccount(user.name));
    const requestId = 'admin-log-by-address';
    await api('POST', onAccount(user.email, '/end-sessions'), 200, { headers: { 'x-request-id': requestId } });
    await api('POST', onAccount(`nobody-${user.email}`, '/end-sessions'), 404, { headers: { 'x-request-id': `${requestId}-2` } });
    const lines = app.logs.filter((line) => line.includes(`"request_id":"${requestId}`)).map((line) => JSON.parse(line));
    const actions = lines.filter((line) => line.msg === 'operator action');
    assert.deepEqual(actions.map((line) => [line.account, line.outcome]), [[id, 'done'], [null, 'not-found']]);
    assert.equal(lines.some((line) => JSON.stringify(line).includes(user.email)), false, 'no line holds the address');
    assert.equal(lines.some((line) => JSON.stringify(line).includes(user.name)), false, 'nor the name');
  });

  it('logs each refused token with the client address, never the token, and throttles refusals by network', async () => {
    const own = await startTestService({ env: { ADMIN_PORT: '0', ADMIN_TOKEN: adminToken } });
    try {
      const wrong = `${adminToken.slice(0, -4)}XXXX`;
      const statuses: number[] = [];
      for (let i = 0; i < 11; i += 1) {
        statuses.push((await call(own.service.adminUrl!, 'GET', '/admin/accounts', { token: wrong })).status);
      }
      assert.deepEqual(statuses, [...Array<number>(10).fill(401), 429], 'ten refusals a minute per network');
      const limited = await call(own.service.adminUrl!, 'GET', '/admin/accounts', { token: wrong });
      assert.equal(limited.json.type, 'urn:account-service:problem:rate-limited');
      assert.match(String(limited.headers['retry-after']), /^[1-9][0-9]*$/);
      const refusals = own.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'admin token refused');
      assert.equal(refusals.length, 10, 'each refusal, up to the throttle');
      assert.deepEqual(new Set(refusals.map((line) => line.client_address)), new Set(['127.0.0.1']));
      assert.equal(own.logs.some((line) => line.includes(wrong) || line.includes(adminToken)), false, 'no token is logged');
      const right = await call(own.service.adminUrl!, 'GET', '/admin/accounts', { token: adminToken });
      assert.equal(right.status, 200, 'the right token is taken: the throttle counts refusals only');
    } finally {
      await own.stop();
    }
  });

  it('logs every call with its operation and outcome, never the token, and counts none in /metrics', async () => {
    const { user } = await registerAndSignIn(app);
    const requestId = 'admin-log-check';
    const headers = { 'x-request-id': requestId };
    const response = await api('POST', onAccount(user.name, '/end-sessions'), 200, { headers });
    assert.equal(response.headers['x-request-id'], requestId);
    const lines = app.logs.map((line) => JSON.parse(line)).filter((line) => line.request_id === requestId);
    const [action, request] = ['operator action', 'request'].map((msg) => lines.find((line) => line.msg === msg));
    assert.equal(lines.length, 2);
    const { id } = await done('GET', onAccount(user.name));
    assert.deepEqual(action, { ...action, operation: 'end-sessions', account: id, outcome: 'done' });
    const path = '/admin/accounts/{target}/end-sessions';
    assert.deepEqual(request, { ...request, method: 'POST', path, status: 200 }, 'the route, not the name it was called with');
    await call(app.service.adminUrl!, 'GET', `/admin/accounts?token=${adminToken}`, { token: adminToken });
    assert.equal(app.logs.some((line) => line.includes(adminToken)), false, 'the token is in no log line');
    const metrics = await app.call('GET', '/metrics');
    assert.equal(metrics.text.includes('/admin'), false, 'a public /metrics does not tell when operators act');
  });
});
