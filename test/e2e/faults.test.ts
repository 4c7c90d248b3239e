import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import postgres from 'postgres';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src/storage/embedded-db.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { call } from '../helpers/http.ts';
import { runMain, type Running } from '../helpers/process.ts';
import { startTestService, testEncryptionKeys, testSecret, type TestService } from '../helpers/service.ts';
import { codeIn, startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { untilQueuesDrained, waitUntil } from '../helpers/wait.ts';

/** Opens a raw connection and resolves when the server closes it, with what it answered. */
function rawConnection(url: string): { socket: Socket; closed: Promise<string> } {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk.toString()));
  const closed = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(answer));
    socket.on('error', () => {});
  });
  return { socket, closed };
}

describe('slow and hostile clients', () => {
  let app: TestService;
  before(async () => {
    app = await startTestService({ httpTimeouts: { headersTimeout: 500, requestTimeout: 1_000, keepAliveTimeout: 300 } });
  });
  after(async () => {
    await app.stop();
  });

  it('closes a connection whose headers trickle in (slow loris)', async () => {
    const { socket, closed } = rawConnection(app.url);
    socket.write('POST /acc/reg HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => socket.writable && socket.write('X-A: b\r\n'), 100);
    const answer = await closed;
    clearInterval(drip);
    assert.match(answer, /^HTTP\/1\.1 408 /);
  });

  it('closes a connection whose body trickles in', async () => {
    const { socket, closed } = rawConnection(app.url);
    socket.write('POST /acc/reg HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
    const drip = setInterval(() => socket.writable && socket.write(' '), 100);
    await closed;
    clearInterval(drip);
    assert.equal(socket.destroyed, true);
  });

  it('keeps serving others while hundreds of connections sit idle, and closes the idle ones', async () => {
    const idle = Array.from({ length: 300 }, () => rawConnection(app.url));
    await delay(100);
    const response = await app.call('GET', '/healthz');
    assert.equal(response.status, 200);
    await Promise.all(idle.map((connection) => connection.closed));
  });

  it('closes a kept-alive connection after the keep-alive timeout', async () => {
    const { socket, closed } = rawConnection(app.url);
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const answer = await closed;
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer, /Keep-Alive: timeout=0/);
  });
});

describe('database faults, in the service process as deployed', () => {
  let dataDir: string;
  let database: EmbeddedDatabase;
  let smtp: TestSmtp;
  let running: Running;
  let url: string;
  const log = createLogger('warn', () => {});
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'account-service-fault-'));
    await chmod(dataDir, 0o755);
    database = await startEmbeddedDatabase(dataDir, log);
    smtp = await startTestSmtp();
    running = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SMTP_URL: smtp.url, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1', RATE_LIMIT: '0', ACCOUNT_RATE_LIMIT: '0' });
    url = ((await running.waitFor(/"msg":"listening"/)) as { url: string }).url;
  });
  after(async () => {
    running.kill('SIGTERM');
    await running.exit;
    await smtp.stop();
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function register(name: string): Promise<string> {
    const email = `${name}@example.com`;
    assert.equal((await call(url, 'POST', '/acc/reg/code', { json: { name, email, pwd: 'quiet-harbor-1' } })).status, 204);
    const code = codeIn(await smtp.waitFor((message) => message.to === email));
    assert.equal((await call(url, 'POST', '/acc/reg', { json: { code } })).status, 204);
    const token = await call(url, 'POST', '/auth/token', { json: { grant_type: 'password', username: name, password: 'quiet-harbor-1' } });
    return token.json.access_token as string;
  }

  it('fails fast with 503 while the database is away, and recovers by itself when it returns', async () => {
    const token = await register('before-outage');
    const port = Number(new URL(database.url).port);
    // The database goes away while a message is being sent: claimed under its lease, not yet settled.
    const probe = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      await untilQueuesDrained(probe);
      smtp.delayNext(1_000);
      assert.equal((await call(url, 'POST', '/acc/reg/code', { json: { name: 'mid-send', email: 'mid-send@example.com', pwd: 'quiet-harbor-1' } })).status, 204);
      await waitUntil(async () => (await probe`SELECT count(*)::int AS n FROM outbox WHERE recipient = 'mid-send@example.com' AND lease IS NOT NULL`)[0]!.n === 1);
    } finally {
      await probe.end();
    }
    await database.stop();

    const registration = await call(url, 'POST', '/acc/reg/code', { json: { name: 'during-outage', email: 'during@example.com', pwd: 'quiet-harbor-1' } });
    assert.equal(registration.status, 503);
    assert.equal(registration.json.type, 'urn:account-service:problem:unavailable');
    assert.equal(registration.headers['retry-after'], '5');
    assert.equal((await call(url, 'GET', '/acc/me', { token })).status, 503);
    assert.equal((await call(url, 'GET', '/readyz')).status, 503);
    assert.equal((await call(url, 'GET', '/healthz')).status, 200, 'the process itself is fine');
    const metrics = await call(url, 'GET', '/metrics');
    assert.equal(metrics.status, 200, 'a scrape does not fail with the database');
    assert.match(metrics.text, /^database_up 0$/m);

    database = await startEmbeddedDatabase(dataDir, log, port);
    await waitUntil(async () => (await call(url, 'GET', '/readyz')).status === 200, 15_000);
    // Every connection of the pool must work again, not just the first one asked. A connection
    // that the driver left broken costs one CONNECT_TIMEOUT (5 s), after which the pool is replaced.
    await waitUntil(async () => {
      const answers = await Promise.all(Array.from({ length: 30 }, () => call(url, 'GET', '/acc/me', { token })));
      return answers.every((answer) => answer.status === 200);
    }, 20_000);
    await register('after-outage');
    assert.equal(running.lines.some((line) => line.includes('"msg":"uncaught exception"')), false);
    await smtp.waitFor((message) => message.to === 'mid-send@example.com');
  });

  // The bounds are wide on purpose: what they hold is that nothing waits for the driver's own
  // reconnection backoff (up to 20 s), on a machine that may be busy with other work.
  it('answers every request within 5 s while PostgreSQL dies under load, and serves again within 5 s of its return', async () => {
    const token = await register('under-load');
    const port = Number(new URL(database.url).port);
    const answers: Array<{ status: number; ms: number; at: number }> = [];
    let streaming = true;
    // Ten clients in a loop: reads, the unknown-code path and a write, as the database goes away.
    const stream = async (client: number) => {
      while (streaming) {
        const started = performance.now();
        const response =
          client % 3 === 0
            ? await call(url, 'GET', '/acc/me', { token })
            : client % 3 === 1
              ? await call(url, 'POST', '/acc/reg', { json: { code: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' } })
              : await call(url, 'GET', '/acc/me/sessions', { token });
        answers.push({ status: response.status, ms: performance.now() - started, at: performance.now() });
      }
    };
    const clients = Array.from({ length: 10 }, (_, client) => stream(client));
    await delay(500);
    // pg_ctl -m immediate: SIGQUIT to the postmaster, which kills its backends without a goodbye.
    const postmaster = Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(postmaster, 'SIGQUIT');
    const stoppedAt = performance.now();
    await waitUntil(async () => !isAlive(postmaster), 10_000);
    await delay(3_000);
    assert.equal((await call(url, 'GET', '/healthz')).status, 200, 'the process answers its health check throughout');
    database = await startEmbeddedDatabase(dataDir, log, port);
    const backAt = performance.now();
    await waitUntil(async () => answers.some((answer) => answer.at > backAt && answer.status === 200), 10_000);
    const recoveredAt = answers.find((answer) => answer.at > backAt && answer.status === 200)!.at;
    streaming = false;
    await Promise.all(clients);

    const during = answers.filter((answer) => answer.at > stoppedAt && answer.at < backAt);
    assert.ok(during.length > 20, `requests during the outage: ${during.length}`);
    assert.ok(during.some((answer) => answer.status === 503), 'the outage is answered 503');
    const slowest = Math.max(...answers.map((answer) => answer.ms));
    assert.ok(slowest < 5_000, `every answer within 5 s, the slowest took ${Math.round(slowest)} ms`);
    assert.deepEqual([...new Set(answers.map((answer) => answer.status))].filter((status) => ![200, 404, 503].includes(status)), [], 'nothing but success or 503');
    assert.ok(recoveredAt - backAt < 5_000, `success again ${Math.round(recoveredAt - backAt)} ms after the database returned`);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
