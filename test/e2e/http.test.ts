import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { routes } from '../../src/routes.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';

let app: TestService;
before(async () => {
  app = await startTestService();
});
after(async () => {
  await app.stop();
});

const problemType = (slug: string) => `urn:account-service:problem:${slug}`;

describe('the HTTP edge', () => {
  it('answers, logs and counts requests that the HTTP parser refuses, without their bytes', async () => {
    const send = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const { port } = new URL(app.url);
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(bytes));
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
      });
    const before = app.logs.length;
    const refused = await send('BREW /coffee NOT-HTTP/9\r\n\r\n');
    assert.match(refused, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(refused, /\r\nCache-Control: no-store\r\n/, 'the headers of every answer');
    assert.match(refused, /\r\nX-Content-Type-Options: nosniff\r\n/);
    assert.match(await send('FOO /acc/me HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 400 Bad Request\r\n[^]*Cache-Control: no-store/, 'a method the parser does not know');
    assert.match(await send(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Secret-Header: ${'s'.repeat(20_000)}\r\n\r\n`), /^HTTP\/1\.1 431 /);
    const lines = app.logs.slice(before).filter((line) => line.includes('refused by the HTTP parser')).map((line) => JSON.parse(line));
    assert.deepEqual(lines.map((line) => line.status), [400, 400, 431]);
    for (const line of lines) {
      assert.equal(line.client, '127.0.0.1');
      assert.match(line.reason, /^HPE_/);
      assert.match(line.request_id, /^[0-9a-f-]{36}$/);
    }
    assert.equal(app.logs.slice(before).join('').includes('sss'), false, 'no header value reaches the log');
    const metrics = (await app.call('GET', '/metrics')).text;
    assert.match(metrics, /^http_requests_total\{method="OTHER",route="unparsed",status="400"\} [1-9]/m);
    assert.match(metrics, /^http_requests_total\{method="OTHER",route="unparsed",status="431"\} [1-9]/m);
  });

  it('ends every JSON answer, errors included, with a newline', async () => {
    for (const [method, path] of [['GET', '/healthz'], ['GET', '/no/such/path'], ['POST', '/acc/reg']] as const) {
      const response = await app.call(method, path, method === 'POST' ? { json: {} } : {});
      assert.match(response.headers['content-type'] ?? '', /json/, path);
      assert.equal(response.text.endsWith('}\n'), true, `${method} ${path}: ${JSON.stringify(response.text)}`);
    }
  });

  it('sends every answer with its length, never chunked', async () => {
    const answers = [
      await app.call('GET', '/healthz'),
      await app.call('GET', '/nowhere'),
      await app.call('GET', '/metrics'),
      await app.call('POST', '/auth/revoke', { json: { token: 'unknown' } }),
      await app.call('POST', '/acc/reg/code', { json: uniqueUser() }),
    ];
    assert.deepEqual(
      answers.map((answer) => [answer.status, answer.headers['content-length'], answer.headers['transfer-encoding']]),
      answers.map((answer) => [answer.status, answer.status === 204 ? undefined : String(Buffer.byteLength(answer.text)), undefined]),
    );
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 404, 200, 200, 204],
    );
  });

  it('sets the safety headers and echoes a well-formed X-Request-Id', async () => {
    const response = await app.call('GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(response.status, 200);
    assert.deepEqual(response.json, { status: 'ok' });
    assert.equal(response.headers['x-request-id'], 'abc-123');
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.equal(response.headers['x-content-type-options'], 'nosniff');
    assert.equal(response.headers['x-powered-by'], undefined);

    const generated = await app.call('GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });

  it('answers /readyz once the database is migrated', async () => {
    const response = await app.call('GET', '/readyz');
    assert.equal(response.status, 200);
    assert.deepEqual(response.json, { status: 'ready' });
  });

  it('answers 404 for an unknown path and 405 with Allow for a known path', async () => {
    const missing = await app.call('GET', '/nope?x=1');
    assert.equal(missing.status, 404);
    assert.equal(missing.headers['content-type'], 'application/problem+json');
    assert.deepEqual(missing.json, { type: problemType('not-found'), title: 'No such resource', status: 404 });

    const wrongMethod = await app.call('DELETE', '/acc/reg/code');
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.allow, 'POST');
    assert.equal(wrongMethod.json.type, problemType('method-not-allowed'));
    assert.equal((await app.call('GET', '/acc/me/pwd')).headers.allow, 'PUT');
    assert.equal((await app.call('POST', '/acc/reg/code/')).status, 404, 'paths match exactly');
  });

  it('answers HEAD on every GET route with the status and headers of GET and no body, and lists HEAD in Allow', async () => {
    const { token } = await registerAndSignIn(app);
    for (const route of routes.filter((candidate) => candidate.method === 'GET')) {
      const get = await app.call('GET', route.path, { token });
      const head = await app.call('HEAD', route.path, { token });
      assert.equal(head.status, get.status, route.path);
      assert.equal(head.text, '', route.path);
      for (const name of ['content-type', 'cache-control', 'x-content-type-options']) assert.equal(head.headers[name], get.headers[name], `${route.path} ${name}`);
      // The metrics change with every request, the GET just made among them.
      if (route.path !== '/metrics') assert.equal(head.headers['content-length'], get.headers['content-length'], route.path);
    }
    const unauthenticated = await app.call('HEAD', '/acc/me');
    assert.equal(unauthenticated.status, 401);
    assert.equal(unauthenticated.text, '');
    assert.equal((await app.call('DELETE', '/healthz')).headers.allow, 'GET, HEAD');
    assert.equal((await app.call('POST', '/acc/me')).headers.allow, 'GET, HEAD, DELETE');
    assert.equal((await app.call('HEAD', '/acc/reg/code')).headers.allow, 'POST');
  });

  it('answers 415 for a missing or wrong content type or charset', async () => {
    const body = JSON.stringify(uniqueUser());
    for (const type of [undefined, 'text/plain', 'application/json; charset=latin1', 'application/jsonx']) {
      const response = await app.call('POST', '/acc/reg/code', { body, headers: type === undefined ? {} : { 'content-type': type } });
      assert.equal(response.status, 415, String(type));
      assert.equal(response.json.type, problemType('unsupported-media-type'));
    }
    const withCharset = await app.call('POST', '/acc/reg/code', { body: JSON.stringify(uniqueUser()), headers: { 'content-type': 'Application/JSON; charset="UTF-8"' } });
    assert.equal(withCharset.status, 204);
  });

  it('answers 400 for malformed JSON, invalid UTF-8 and non-objects', async () => {
    const bodies: Array<string | Buffer> = ['{"name":', '', 'null', '[]', '"text"', '42', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])];
    for (const body of bodies) {
      const response = await app.call('POST', '/acc/reg/code', { body, headers: { 'content-type': 'application/json' } });
      assert.equal(response.status, 400, String(body));
      assert.equal(response.json.type, problemType('malformed-body'));
    }
  });

  it('answers 413 for a body over 8 KiB, declared or streamed', async () => {
    const declared = await app.call('POST', '/acc/reg/code', { json: { name: 'x'.repeat(9000) } });
    assert.equal(declared.status, 413);
    assert.equal(declared.json.type, problemType('body-too-large'));
    assert.equal(declared.headers.connection, 'close');

    const streamed = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(app.url).port), '127.0.0.1');
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', () => resolve(answer));
      socket.setTimeout(5000, () => reject(new Error('no answer')));
      socket.write('POST /acc/reg/code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
      const chunk = 'a'.repeat(4096);
      for (let i = 0; i < 4; i += 1) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    });
    assert.match(streamed, /^HTTP\/1\.1 413 /);
  });

  it('checks every registration field with the spec patterns and lists every failure', async () => {
    const good = { name: 'good-name', email: 'a@example.com', pwd: 'secret', phone: '+12 345 678 9012' };
    const bad: Array<[string, unknown]> = [
      ['name', 'a'],
      ['name', 'a'.repeat(33)],
      ['name', 'Upper'],
      ['name', 'has space'],
      ['name', 'good-name\n'],
      ['name', 12],
      ['name', null],
      ['email', 'no-at-sign'],
      ['email', `${'a'.repeat(65)}@example.com`],
      ['email', 'a@b'],
      ['email', 'a@-example.com'],
      ['email', 'a+tag@example.com'],
      ['email', 'a@example.com\n'],
      ['email', ['a@example.com']],
      ['email', null],
      ['pwd', 'short'],
      ['pwd', 'x'.repeat(33)],
      ['pwd', 'line\nbreak'],
      ['pwd', 'secret\n'],
      ['pwd', 123456],
      ['pwd', null],
      ['pwd', { length: 6 }],
      ['phone', '+1 234 567 8901'],
      ['phone', '+12 345 67 8901'],
      ['phone', '12 345 678 9012'],
      ['phone', '+12 345 678 9012\n'],
      ['phone', 1234],
      ['phone', ''],
      ['phone', true],
    ];
    for (const [field, value] of bad) {
      const response = await app.call('POST', '/acc/reg/code', { json: { ...good, [field]: value } });
      assert.equal(response.status, 400, `${field}=${JSON.stringify(value)}`);
      assert.equal(response.json.type, problemType('invalid-fields'));
      assert.deepEqual(response.json['invalid-params'].map((param: { name: string }) => param.name), [field], `${field}=${JSON.stringify(value)}`);
    }
    const all = await app.call('POST', '/acc/reg/code', { json: { constructor: 1, __proto__: 2 } as object });
    assert.deepEqual(all.json['invalid-params'].map((param: { name: string }) => param.name), ['name', 'email', 'pwd', 'constructor']);
    const proto = await app.call('POST', '/acc/reg/code', { body: '{"__proto__":{"admin":true}}', headers: { 'content-type': 'application/json' } });
    assert.ok(proto.json['invalid-params'].some((param: { name: string }) => param.name === '__proto__'));
    const [row] = await app.service.sql`SELECT count(*)::int AS n FROM accounts WHERE name = 'good-name'`;
    assert.equal(row!.n, 0, 'nothing was stored');
  });

  it('accepts the edges the patterns allow', async () => {
    const edges = [
      { name: 'ab', email: `${'a'.repeat(64)}@[1.2.3.4]`, pwd: 'ü'.repeat(32), phone: null },
      { name: 'a'.repeat(32), email: 'a.b-c_d@x.y', pwd: '😀😀😀😀😀😀' },
      { name: '0-9', email: 'X@EXAMPLE.COM', pwd: '      ', phone: '+12 345 6789 0123' },
    ];
    for (const json of edges) {
      const response = await app.call('POST', '/acc/reg/code', { json });
      assert.equal(response.status, 204, `${JSON.stringify(json)}: ${response.text}`);
    }
  });

  it('checks the code against the spec pattern', async () => {
    for (const code of ['ABCD-EFGH-IJKL', 'ABCD-EFGH-IJKL-MNO1', 'ABCD-EFGH-IJKL-MNOP\n', 'ABCDEFGHIJKLMNOP', 7, null]) {
      const response = await app.call('POST', '/acc/reg', { json: { code } });
      assert.equal(response.status, 400, JSON.stringify(code));
      assert.equal(response.json['invalid-params'][0].name, 'code');
    }
    const extra = await app.call('POST', '/acc/reg', { json: { code: 'ABCD-EFGH-IJKL-MNOP', admin: true } });
    assert.deepEqual(extra.json['invalid-params'], [{ name: 'admin', reason: 'is not a known field' }]);
  });

  it('ends the handler of a client that hangs up in the middle of its body', async () => {
    const socket = connect(Number(new URL(app.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('POST /acc/reg HTTP/1.1\r\nHost: x\r\nX-Request-Id: hung-up-1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"co');
    await delay(50);
    socket.destroy();
    const { waitUntil } = await import('../helpers/wait.ts');
    const isItsLine = (line: string) => line.includes('"msg":"request"') && line.includes('"request_id":"hung-up-1"');
    await waitUntil(async () => app.logs.some(isItsLine), 5_000);
    assert.equal(JSON.parse(app.logs.find(isItsLine)!).status, 400);
    assert.equal(app.logs.some((line) => line.includes('"level":"error"') && line.includes('hung-up-1')), false, 'not logged as a fault');
  });

  it('finishes a request in flight when it stops, and refuses new connections', async () => {
    const stopping = await (await import('../helpers/service.ts')).startTestService();
    const { port } = new URL(stopping.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const body = JSON.stringify({ code: 'ABCD-EFGH-IJKL-MNOP' });
    socket.write(`POST /acc/reg HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body.slice(0, 5));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    await delay(100);
    const stopped = stopping.stop();
    await delay(100);
    socket.write(body.slice(5));
    await stopped;
    assert.match(answer, /^HTTP\/1\.1 404 /, 'the request in flight got its answer');
    await assert.rejects(fetch(stopping.url), 'no new connections once stopped');
    socket.destroy();
  });

  it('logs one line per request and never a password, code or token', async () => {
    const { user, token } = await registerAndSignIn(app);
    await app.call('PUT', '/acc/me/pwd', { token, json: { old_pwd: user.pwd, new_pwd: 'log-check-new' } });
    const codes = app.smtp.messages.map((mail) => /[A-Z]{4}-[A-Z]{4}-[A-Z]{4}-[A-Z]{4}/.exec(mail.text)?.[0]).filter((code) => code !== undefined);
    const log = app.logs.join('');
    for (const secret of [user.pwd, 'log-check-new', token, token.split('.')[2]!, ...codes]) {
      assert.equal(log.includes(secret), false, `the log holds a secret`);
    }
    const requests = app.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request');
    assert.ok(requests.length > 5);
    for (const line of requests) assert.deepEqual(Object.keys(line).sort(), ['level', 'method', 'ms', 'msg', 'path', 'request_id', 'status', 'time']);
  });
});
