import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { deleteAccount, enableTotp } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { call } from '../helpers/http.ts';
import { runMain } from '../helpers/process.ts';
import { codeIn } from '../helpers/smtp.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { registerAndSignIn, signIn, startTestService, testEncryptionKeys, testSecret, uniqueUser, type TestService } from '../helpers/service.ts';
import { webhookEventTypes } from '../../src/webhooks/events.ts';
import { waitUntil } from '../helpers/wait.ts';
import { acceptedEvents, failureAnswer, startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const metricsToken = 'metrics-token-0123456789';
/** The claims of an access token: `sub` is the account's public id, `sid` its session. */
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string; sid: string };
const typesOf = (receiver: Receiver, account: string) => acceptedEvents(receiver.received).filter((event) => event.data.account_id === account).map((event) => event.type);
const signOutEverywhere = (app: TestService, token: string) => app.call('DELETE', '/acc/me/sessions', { token });
const rowsOf = (app: TestService, account: string) => app.service.sql`SELECT type, state, attempts, last_error FROM webhook_events WHERE account = ${account} ORDER BY id`;

describe('webhooks', () => {
  const secret = newSecret();
  let receiver: Receiver;
  let app: TestService;
  before(async () => {
    receiver = await startReceiver(secret);
    app = await startTestService({
      env: { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, METRICS_TOKEN: metricsToken },
      webhooks: { pollMs: 100, timeoutMs: 2_500, backoffBaseMs: 100, backoffCapMs: 400 },
    });
  });
  after(async () => {
    await app.stop();
    await receiver.stop();
  });

  it('sends every event type of an account, signed, in the order of their causes, with no secret in a body', async () => {
    receiver.mode = 'ok';
    const { user, token } = await registerAndSignIn(app);
    const account = claimsOf(token).sub;

    // Reuse detection: a spent refresh token presented after the retry window.
    const refresh = (refreshToken: string) => app.call('POST', '/auth/token', { json: { grant_type: 'refresh_token', refresh_token: refreshToken } });
    const first = (await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd } })).json;
    assert.equal((await refresh(first.refresh_token)).status, 200);
    app.clock.advance(11);
    assert.equal((await refresh(first.refresh_token)).status, 400);

    assert.equal((await signOutEverywhere(app, await signIn(app, user.name, user.pwd))).status, 204);
    const changed = await app.call('PUT', '/acc/me/pwd', { token: await signIn(app, user.name, user.pwd), json: { old_pwd: user.pwd, new_pwd: 'changed-password-1' } });
    assert.equal(changed.status, 204);

    const mailsBefore = app.smtp.messages.length;
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    const code = codeIn(await app.smtp.waitFor((mail) => mail.subject === 'Your password reset code' && app.smtp.messages.indexOf(mail) >= mailsBefore));
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code, new_pwd: 'reset-password-1' } })).status, 204);
    const deleted = await deleteAccount(app, await signIn(app, user.name, 'reset-password-1'), { email: user.email, pwd: 'reset-password-1' });
    assert.equal(deleted.status, 204);

    await receiver.waitFor(() => typesOf(receiver, account).length === 6);
    const events = acceptedEvents(receiver.received).filter((event) => event.data.account_id === account);
    assert.deepEqual(
      events.map(({ type, data }) => ({ type, data })),
      [
        { type: 'account.activated', data: { account_id: account } },
        { type: 'sessions.revoked', data: { reason: 'refresh_token_reused', session_id: claimsOf(first.access_token).sid, account_id: account } },
        { type: 'sessions.revoked', data: { reason: 'signed_out_everywhere', account_id: account } },
        { type: 'password.changed', data: { account_id: account } },
        { type: 'password.reset', data: { account_id: account } },
        { type: 'account.deleted', data: { account_id: account } },
      ],
    );
    const times = events.map((event) => Date.parse(event.timestamp));
    assert.deepEqual([...times].sort((a, b) => a - b), times, 'the time of each cause, in order');
    assert.equal(new Set(events.map((event) => event.id)).size, 6, 'one webhook-id per event');
    const mine = receiver.received.filter((entry) => events.some((event) => event.id === entry.id));
    assert.ok(mine.every((entry) => entry.verified), 'every request verifies under the secret');
    for (const secretValue of [user.pwd, 'changed-password-1', 'reset-password-1', code, first.refresh_token, first.access_token, token]) {
      assert.ok(!mine.some((entry) => entry.body.includes(secretValue)), 'no password, code or token in a body');
    }
    // With its last event delivered, nothing of the deleted account stays behind.
    await waitUntil(async () => (await rowsOf(app, account)).length === 0);
  });

  it('sends second_factor.enabled and second_factor.disabled, with the method, when a factor is confirmed and disabled', async () => {
    receiver.mode = 'ok';
    const { user, token } = await registerAndSignIn(app);
    const account = claimsOf(token).sub;
    const enrolled = await enableTotp(app, token, user);
    const otp = referenceTotp(enrolled.secret, (enrolled.step + 1) * 30);
    assert.equal((await app.call('DELETE', '/acc/me/totp', { token, json: { pwd: user.pwd, otp } })).status, 204);
    await receiver.waitFor(() => typesOf(receiver, account).length === 3);
    const events = acceptedEvents(receiver.received).filter((event) => event.data.account_id === account);
    assert.deepEqual(
      events.map(({ type, data }) => ({ type, data })),
      [
        { type: 'account.activated', data: { account_id: account } },
        { type: 'second_factor.enabled', data: { method: 'totp', account_id: account } },
        { type: 'second_factor.disabled', data: { method: 'totp', account_id: account } },
      ],
    );
    assert.ok(!receiver.received.some((entry) => entry.body.includes(enrolled.secret)), 'no secret in a body');
  });

  it('waits out a receiver that fails and then is down: everything arrives, in order, duplicates with the same id', async () => {
    receiver.mode = 'fail';
    const a = await registerAndSignIn(app, uniqueUser('hook-a'));
    const accountA = claimsOf(a.token).sub;
    const activationA = () => receiver.received.filter((entry) => entry.body.includes(accountA));
    // The receiver gets the first event, answers 503, and gets it again with the same id.
    await receiver.waitFor(() => activationA().length >= 2);
    const b = await registerAndSignIn(app, uniqueUser('hook-b'));
    const accountB = claimsOf(b.token).sub;
    assert.equal((await signOutEverywhere(app, a.token)).status, 204);
    assert.equal((await signOutEverywhere(app, b.token)).status, 204);
    const changed = await app.call('PUT', '/acc/me/pwd', { token: await signIn(app, a.user.name, a.user.pwd), json: { old_pwd: a.user.pwd, new_pwd: 'hook-a-password-2' } });
    assert.equal(changed.status, 204);

    await receiver.down();
    await waitUntil(async () => (await rowsOf(app, accountA)).some((row) => row.last_error === 'ECONNREFUSED'));
    // The later events of an account wait, unsent, while its first is retried.
    const waiting = await rowsOf(app, accountA);
    assert.deepEqual(waiting.map((row) => [row.type, row.state]), [['account.activated', 'pending'], ['sessions.revoked', 'pending'], ['password.changed', 'pending']]);
    assert.ok((waiting[0]!.attempts as number) >= 2);
    assert.deepEqual(waiting.slice(1).map((row) => row.attempts), [0, 0]);
    assert.ok(activationA().every((entry) => JSON.parse(entry.body).type === 'account.activated'), 'nothing later reached the receiver');

    receiver.mode = 'ok';
    await receiver.up();
    await receiver.waitFor(() => typesOf(receiver, accountA).length === 3 && typesOf(receiver, accountB).length === 2);
    assert.deepEqual(typesOf(receiver, accountA), ['account.activated', 'sessions.revoked', 'password.changed']);
    assert.deepEqual(typesOf(receiver, accountB), ['account.activated', 'sessions.revoked']);
    const copies = receiver.received.filter((entry) => entry.body.includes(accountA) || entry.body.includes(accountB));
    const byId = new Map<string, typeof copies>();
    for (const entry of copies) byId.set(entry.id, [...(byId.get(entry.id) ?? []), entry]);
    assert.equal(byId.size, 5, 'five events, each under one webhook-id however often it was sent');
    for (const [id, sent] of byId) {
      assert.equal(new Set(sent.map((entry) => entry.body)).size, 1, `${id}: the same body every time`);
      assert.ok(sent.every((entry) => entry.verified), `${id}: every copy verifies`);
    }
    assert.ok(byId.get(activationA()[0]!.id)!.length >= 3, 'the first event of A was sent again and again');
    await waitUntil(async () => (await rowsOf(app, accountA)).every((row) => row.state === 'delivered'));
    assert.ok(!app.logs.some((line) => line.includes(failureAnswer)), "the receiver's answer is never logged");
  });

  it('gives up on a receiver that hangs after the timeout and tries again, while requests answer at once', async () => {
    receiver.mode = 'hang';
    const c = await registerAndSignIn(app, uniqueUser('hook-c'));
    const accountC = claimsOf(c.token).sub;
    const copiesC = () => receiver.received.filter((entry) => entry.body.includes(accountC));
    await receiver.waitFor(() => copiesC().length === 1);
    // The worker is stuck on the receiver; a request that queues an event does not wait for it.
    assert.equal((await signOutEverywhere(app, c.token)).status, 204);
    assert.equal(copiesC().length, 1, 'answered while the delivery was still hanging');
    await receiver.waitFor(() => copiesC().length >= 2);
    assert.equal(copiesC()[1]!.id, copiesC()[0]!.id, 'the retry of the same event');
    assert.match(String((await rowsOf(app, accountC))[0]!.last_error), /^no answer within 2500 ms$/);
    receiver.mode = 'ok';
    await receiver.waitFor(() => typesOf(receiver, accountC).length === 2);
    assert.deepEqual(typesOf(receiver, accountC), ['account.activated', 'sessions.revoked']);
  });

  it('shows pending and failed events in /metrics, counted by the worker, only with the metrics token', async () => {
    await app.service.sweep();
    assert.equal((await app.call('GET', '/metrics')).status, 401);
    const metrics = await app.call('GET', '/metrics', { token: metricsToken });
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /^webhook_events\{state="pending"\} \d+$/m);
    assert.doesNotMatch(metrics.text, /^webhook_events\{state="delivered"\}/m, 'delivered events are not counted: that would read a week of them');
    assert.match(metrics.text, /^webhook_events\{state="failed"\} 0$/m);
  });
});

describe('webhooks to a receiver that cannot verify them', () => {
  const secret = newSecret();
  let receiver: Receiver;
  let app: TestService;
  before(async () => {
    // The receiver holds another secret: it rejects every event, and answers 503.
    receiver = await startReceiver(newSecret());
    app = await startTestService({
      env: { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, METRICS_TOKEN: metricsToken },
      webhooks: { pollMs: 100, timeoutMs: 1_000, maxAttempts: 3, backoffBaseMs: 50, backoffCapMs: 100 },
    });
  });
  after(async () => {
    await app.stop();
    await receiver.stop();
  });

  it('are rejected by the verifier under a wrong secret, and accepted under the right one', async () => {
    const { token } = await registerAndSignIn(app);
    const account = claimsOf(token).sub;
    await receiver.waitFor((received) => received.some((entry) => entry.body.includes(account)));
    const entry = receiver.received.find((candidate) => candidate.body.includes(account))!;
    assert.equal(entry.verified, false);
    const headers = { 'webhook-id': entry.id, 'webhook-timestamp': entry.timestamp, 'webhook-signature': entry.signature };
    assert.throws(() => new Webhook(newSecret()).verify(entry.body, headers), /signature/i);
    assert.equal((new Webhook(secret).verify(entry.body, headers) as { type: string }).type, 'account.activated');
  });

  it('keep a failed event as a row and a log line after the last attempt, and send the next event of the account', async () => {
    const { token } = await registerAndSignIn(app);
    const account = claimsOf(token).sub;
    await waitUntil(async () => (await rowsOf(app, account))[0]?.state === 'failed');
    const [failed] = await rowsOf(app, account);
    assert.deepEqual({ ...failed }, { type: 'account.activated', state: 'failed', attempts: 3, last_error: 'HTTP 503' });
    assert.equal(receiver.received.filter((entry) => entry.body.includes(account)).length, 3);
    // Logged once the failed state is written, a moment after the row shows it.
    await waitUntil(async () => app.logs.some((line) => line.includes('"msg":"webhook failed; no more attempts"') && line.includes('"type":"account.activated"')));
    assert.ok(!app.logs.some((line) => line.includes(failureAnswer)), "the receiver's answer is never logged");

    // A failed event no longer holds back the account's later ones.
    assert.equal((await signOutEverywhere(app, token)).status, 204);
    await receiver.waitFor((received) => received.some((entry) => entry.body.includes(account) && entry.body.includes('sessions.revoked')));
    await app.service.sweep();
    assert.match((await app.call('GET', '/metrics', { token: metricsToken })).text, /^webhook_events\{state="failed"\} [1-9]\d*$/m);
  });
});

describe('webhooks, off by default', () => {
  it('are not queued without WEBHOOK_URL', async () => {
    const app = await startTestService({ env: { METRICS_TOKEN: metricsToken } });
    try {
      const { token } = await registerAndSignIn(app);
      assert.equal((await signOutEverywhere(app, token)).status, 204);
      const [row] = await app.service.sql`SELECT count(*)::int AS n FROM webhook_events`;
      assert.equal(row!.n, 0);
      assert.doesNotMatch((await app.call('GET', '/metrics', { token: metricsToken })).text, /webhook_events/);
    } finally {
      await app.stop();
    }
  });
});

describe('webhooks across a kill -9', () => {
  it('delivers an event whose service died between commit and delivery, after a restart, with the same id', async () => {
    const secret = newSecret();
    const receiver = await startReceiver(secret);
    const database = await createTestDatabase();
    const dataDir = await mkdtemp(join(tmpdir(), 'webhooks-kill-'));
    try {
      // The account is made by an in-process service without webhooks, on the same database.
      const setup = await startTestService({ databaseUrl: database.url });
      const { user } = await registerAndSignIn(setup);
      await setup.stop();

      const env = { DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SCRYPT_PARAMS: 'ln=4,r=8,p=1', PORT: '0', DATA_DIR: dataDir, RATE_LIMIT: '0', WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret };
      const first = runMain(env);
      const { url } = (await first.waitFor(/"msg":"listening"/)) as { url: string };
      receiver.mode = 'hang';
      const signedIn = await call(url, 'POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd } });
      assert.equal(signedIn.status, 200);
      assert.equal((await call(url, 'DELETE', '/acc/me/sessions', { token: signedIn.json.access_token })).status, 204);
      // Committed and on its way, but not delivered: the receiver holds the request.
      await receiver.waitFor((received) => received.length === 1);
      first.kill('SIGKILL');
      await first.exit;

      receiver.mode = 'ok';
      const second = runMain(env);
      try {
        await second.waitFor(/"msg":"listening"/);
        // The dead worker's claim runs out (timeout + 10 s) before the event is sent again.
        await receiver.waitFor((received) => acceptedEvents(received).length === 1, 60_000);
        const [delivered] = acceptedEvents(receiver.received);
        assert.equal(delivered!.id, receiver.received[0]!.id, 'the same webhook-id as the attempt cut by the kill');
        assert.equal(delivered!.type, 'sessions.revoked');
        assert.equal(delivered!.data.account_id, claimsOf(signedIn.json.access_token).sub);
        assert.ok(receiver.received.every((entry) => entry.verified));
      } finally {
        second.kill('SIGTERM');
        await second.exit;
      }
    } finally {
      await receiver.stop();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('docs/webhooks.md', () => {
  it('has a row for every event type the service sends', async () => {
    const docs = await readFile(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
    const missing = webhookEventTypes.filter((type) => !docs.includes(`\n| \`${type}\` |`));
    assert.deepEqual(missing, []);
  });
});

describe('the receiver example of docs/webhooks.md', () => {
  it('accepts the service\'s events, and answers 401 to a request without a valid signature', async () => {
    const docs = await readFile(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
    const example = /```js\n([\s\S]*?)```/.exec(docs)![1]!;
    assert.equal(example.trimEnd().split('\n').length, 10, 'ten lines');
    const port = await freePort();
    const secret = newSecret();
    // Run as written, from the repository root so that it finds the standardwebhooks package.
    const child = spawn(process.execPath, ['--input-type=module', '-e', example.replace('.listen(9000)', `.listen(${port})`)], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRET: secret },
      stdio: 'ignore',
    });
    const url = `http://127.0.0.1:${port}/`;
    try {
      await waitUntil(async () => (await call(url, 'POST', '/', { body: '{}' }).catch(() => null))?.status === 401);
      const app = await startTestService({ env: { WEBHOOK_URL: url, WEBHOOK_SECRET: secret }, webhooks: { pollMs: 100 } });
      try {
        const { token } = await registerAndSignIn(app);
        await waitUntil(async () => (await rowsOf(app, claimsOf(token).sub))[0]?.state === 'delivered');
      } finally {
        await app.stop();
      }
    } finally {
      child.kill('SIGTERM');
    }
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
