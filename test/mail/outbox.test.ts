import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { Sql } from '../../src/storage/db.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { accountActiveMail } from '../../src/mail/messages.ts';
import { createOutboxWorker, enqueueMail, type OutboxOptions } from '../../src/mail/outbox.ts';
import { backoffMs } from '../../src/support/queue.ts';
import { createFileTransport, createSmtpTransport, isPermanentFailure } from '../../src/mail/transport.ts';
import { createSealer } from '../../src/core/sealing.ts';
import { createMigratedDatabase } from '../helpers/database.ts';
import { untilQueuesDrained, waitUntil } from '../helpers/wait.ts';
import { codeIn, startTestSmtp } from '../helpers/smtp.ts';
import { builtInMailer, requestCode, startTestService, testEncryptionKeys, uniqueUser, type TestService } from '../helpers/service.ts';
import { parseConfig } from '../../src/config/config.ts';

let app: TestService;
before(async () => {
  app = await startTestService({ outbox: { pollMs: 50, backoffBaseMs: 50, backoffCapMs: 200, maxAttempts: 4 } });
});
after(async () => {
  await app.stop();
});

/** The latest message to `recipient`; until a request's worker has queued it, as if pending. */
const outboxRow = async (recipient: string) => {
  const [row] = await app.service.sql`SELECT * FROM outbox WHERE recipient = ${recipient} ORDER BY id DESC LIMIT 1`;
  return row ?? { state: 'pending' };
};
/** A message by its id: once sent, it keeps no recipient to find it by. */
const outboxRowById = async (id: string) => {
  const [row] = await app.service.sql`SELECT * FROM outbox WHERE id = ${id}`;
  return row!;
};

describe('the outbox', () => {
  it('retries while SMTP refuses temporarily, then delivers with the same Message-ID', async () => {
    const user = uniqueUser();
    app.smtp.failFor(user.email, 2, 451);
    const response = await app.call('POST', '/acc/reg/code', { json: user });
    assert.equal(response.status, 204, 'the request succeeds although mail is failing');
    const mail = await app.smtp.waitFor((message) => message.to === user.email);
    const sentRow = async () => (await app.service.sql`SELECT * FROM outbox WHERE message_id = ${mail.messageId}`)[0]!;
    await waitUntil(async () => (await sentRow()).state !== 'pending');
    const row = await sentRow();
    assert.equal(row.state, 'sent');
    assert.equal(row.recipient, null, 'sent mail keeps no address');
    assert.equal(row.attempts, 3);
    assert.equal(row.last_error, null);
    assert.equal(mail.messageId, row.message_id);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code: codeIn(mail) } })).status, 204, 'the delivered code works');
  });

  it('holds no connection and no lock while SMTP hangs, and delivers once it answers', async () => {
    const user = uniqueUser();
    // The earlier tests' mail out first, so that the held answer is this message's.
    await untilQueuesDrained(app.service.sql);
    app.smtp.delayNext(5_000);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: user })).status, 204);
    await waitUntil(async () => typeof (await outboxRow(user.email)).lease === 'string');
    const { id } = await outboxRow(user.email);
    // Mid-send: the message is claimed, and no backend of the service sits in a transaction.
    // A transaction held across the send would have been idle since the claim; the short
    // transactions of the other workers (the request resolver polls) pass through the state
    // for a moment only, so anything idle for less than 500 ms is not counted. The pause lets a
    // transaction held since the claim grow older than that: it is what is measured, no barrier.
    await delay(600);
    const open = await app.service.sql`
      SELECT query FROM pg_stat_activity
      WHERE datname = current_database() AND state LIKE 'idle in transaction%'
        AND clock_timestamp() - state_change > interval '500 milliseconds'`;
    assert.deepEqual(open.map((row) => row.query), []);
    assert.equal(typeof (await outboxRowById(id)).lease, 'string', 'looked at while the send still hangs');
    // Every connection of the pool is free for requests meanwhile.
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 20 }, () => app.call('GET', '/readyz')));
    assert.ok(answers.every((answer) => answer.status === 200));
    assert.ok(performance.now() - started < 1_500, 'answered while the send hangs');
    const mail = await app.smtp.waitFor((message) => message.to === user.email, 10_000);
    await waitUntil(async () => (await outboxRowById(id)).state === 'sent');
    const row = await outboxRowById(id);
    assert.equal(row.lease, null);
    assert.equal(mail.messageId, row.message_id);
    assert.equal(app.smtp.messages.filter((message) => message.to === user.email).length, 1, 'sent once');
  });

  it('sends a message again after its lease runs out, with the same Message-ID, and lets only the lease holder settle it', async () => {
    const recipient = `${uniqueUser().name}@example.com`;
    // A worker that claimed the message and then died: a lease that has run out.
    await app.service.sql.begin((tx) => enqueueMail(tx, accountActiveMail({ email: recipient, name: 'x', locale: null }), builtInMailer(createSealer(parseConfig({ ENCRYPTION_KEYS: testEncryptionKeys }).encryptionKeys!)), new Date()));
    const [claimed] = await app.service.sql`
      UPDATE outbox SET lease = gen_random_uuid(), attempts = 1, next_attempt_at = now() - interval '1 second'
      WHERE recipient = ${recipient} RETURNING id, message_id`;
    const mail = await app.smtp.waitFor((message) => message.to === recipient);
    assert.equal(mail.messageId, claimed!.message_id);
    await waitUntil(async () => (await outboxRowById(claimed!.id)).state === 'sent');
    assert.equal((await outboxRowById(claimed!.id)).attempts, 2);
  });

  it('stops at once on a permanent refusal and keeps the reason', async () => {
    const user = uniqueUser();
    app.smtp.failFor(user.email, 1, 550);
    await app.call('POST', '/acc/reg/code', { json: user });
    await waitUntil(async () => (await outboxRow(user.email)).state !== 'pending');
    const row = await outboxRow(user.email);
    assert.equal(row.state, 'failed');
    assert.equal(row.attempts, 1);
    assert.match(row.last_error, /550/);
  });

  it('gives up after the bounded number of attempts', async () => {
    const user = uniqueUser();
    app.smtp.failFor(user.email, 10, 421);
    await app.call('POST', '/acc/reg/code', { json: user });
    await waitUntil(async () => (await outboxRow(user.email)).state !== 'pending');
    const row = await outboxRow(user.email);
    assert.equal(row.state, 'failed');
    assert.equal(row.attempts, 4);
  });

  it('marks a message it cannot decrypt as failed instead of retrying it forever', async () => {
    const recipient = `${uniqueUser().name}@example.com`;
    const foreign = createSealer([{ id: 'test', key: Buffer.alloc(32, 9) }]);
    await app.service.sql.begin((tx) => enqueueMail(tx, accountActiveMail({ email: recipient, name: 'x', locale: null }), builtInMailer(foreign), new Date()));
    await waitUntil(async () => (await outboxRow(recipient)).state !== 'pending');
    assert.equal((await outboxRow(recipient)).state, 'failed');
    assert.match((await outboxRow(recipient)).last_error, /decrypt/);
  });

  it('gives up at once on an address the mailer cannot use: no host name, or an IP address in any form', async () => {
    for (const domain of ['evil.test/a:b', '[10.1.2.3]', '1.2.3.4', '2130706433']) {
      const user = { ...uniqueUser(), email: `${uniqueUser().name}@${domain}` };
      const requested = await app.call('POST', '/acc/reg/code', { json: user });
      assert.equal(requested.status, 204, 'the spec\'s pattern takes it');
      await waitUntil(async () => (await outboxRow(user.email)).state !== 'pending');
      const row = await outboxRow(user.email);
      assert.equal(row.state, 'failed', domain);
      assert.equal(row.attempts, 1, `${domain}: not retried as a temporary failure`);
      assert.match(row.last_error, /^EENVELOPE /);
    }
  });

  it('computes an exponential backoff with a cap', () => {
    assert.deepEqual([1, 2, 3, 4, 5].map((attempt) => backoffMs(attempt, { backoffBaseMs: 100, backoffCapMs: 1000 })), [100, 200, 400, 800, 1000]);
    assert.equal(backoffMs(1, {}), 5_000);
    assert.equal(backoffMs(40, {}), 3_600_000);
  });

  it('tells permanent SMTP failures from temporary ones', () => {
    assert.equal(isPermanentFailure({ responseCode: 550 }), true);
    assert.equal(isPermanentFailure({ responseCode: 451 }), false);
    assert.equal(isPermanentFailure(new Error('ECONNREFUSED')), false);
    assert.equal(isPermanentFailure(null), false);
    const noRecipient = Object.assign(new Error('No recipients defined'), { code: 'EENVELOPE' });
    assert.equal(isPermanentFailure(noRecipient), true, 'nodemailer found no recipient');
    assert.equal(isPermanentFailure({ code: 'EENVELOPE', responseCode: 451 }), false, 'a server refused it for now');
  });
});

describe('outbox workers on a queue of their own', () => {
  const sealer = createSealer([{ id: 'queue', key: Buffer.alloc(32, 3) }]);
  const quiet = createLogger('error', () => {});
  let queue: { sql: Sql; drop(): Promise<void> };
  before(async () => {
    queue = await createMigratedDatabase();
  });
  after(async () => {
    await queue.drop();
  });
  const enqueue = (recipients: string[]) =>
    queue.sql.begin(async (tx) => {
      for (const recipient of recipients) await enqueueMail(tx, accountActiveMail({ email: recipient, name: 'x', locale: null }), builtInMailer(sealer), new Date());
    });
  const worker = (smtpUrl: string, options: Partial<OutboxOptions> = {}) =>
    createOutboxWorker({ sql: queue.sql, transport: createSmtpTransport(smtpUrl), sealer, clock: () => new Date(), log: quiet, from: 'a@b.c', pollMs: 20, ...options });
  const row = async (recipient: string) => (await queue.sql`SELECT * FROM outbox WHERE recipient = ${recipient}`)[0]!;

  // Each test stops its workers and servers in t.after, so that a failed assertion leaves no
  // worker behind to claim the next test's messages, and no listening server that keeps this
  // file's process alive.
  const started = <T extends { stop(): Promise<void> }>(t: TestContext, each: T): T => (t.after(() => each.stop()), each);

  it('keeps messages while SMTP is unreachable and delivers them once it is back', async (t) => {
    const recipient = `${uniqueUser().name}@example.com`;
    await enqueue([recipient]);
    // Port 1: refused, as no test listens there and the kernel never hands it out for a
    // listen(0). A port freed by a stopped server could be taken meanwhile by another test
    // process running beside this one.
    const down = started(t, worker('smtp://127.0.0.1:1', { backoffBaseMs: 20, backoffCapMs: 20 }));
    down.wake();
    await waitUntil(async () => ((await row(recipient)).attempts as number) >= 2);
    await down.stop();
    // Read while pending: once sent, the row keeps no recipient to be found by.
    const deferred = await row(recipient);
    assert.equal(deferred.state, 'pending');
    assert.match(deferred.last_error, /ECONNREFUSED/);

    const back = started(t, await startTestSmtp());
    started(t, worker(back.url)).wake();
    const mail = await back.waitFor((message) => message.to === recipient);
    assert.equal(mail.messageId, deferred.message_id, 'the retry keeps the Message-ID');
  });

  it('gives up on an SMTP server that never answers, and retries the message later', async (t) => {
    const { createServer } = await import('node:net');
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => silent.close());
    const port = (silent.address() as { port: number }).port;
    const recipient = `${uniqueUser().name}@example.com`;
    await enqueue([recipient]);
    const stalled = started(
      t,
      createOutboxWorker({
        sql: queue.sql,
        transport: createSmtpTransport(`smtp://127.0.0.1:${port}`, { connectionTimeout: 200, greetingTimeout: 200, socketTimeout: 200 }),
        sealer,
        clock: () => new Date(),
        log: quiet,
        from: 'a@b.c',
        pollMs: 20,
        backoffBaseMs: 20,
        backoffCapMs: 20,
      }),
    );
    stalled.wake();
    await waitUntil(async () => ((await row(recipient)).attempts as number) >= 1);
    await stalled.stop();
    const deferred = await row(recipient);
    assert.equal(deferred.state, 'pending', 'a slow server is a temporary failure');
    assert.match(deferred.last_error, /ETIMEDOUT|timeout/i);

    const smtp = started(t, await startTestSmtp());
    started(t, worker(smtp.url)).wake();
    await smtp.waitFor((message) => message.to === recipient);
  });

  it('delivers each message once when several workers share the queue', async (t) => {
    const smtp = started(t, await startTestSmtp());
    const recipients = Array.from({ length: 8 }, () => uniqueUser().email);
    await enqueue(recipients);
    const workers = Array.from({ length: 3 }, () => started(t, worker(smtp.url)));
    for (const each of workers) each.wake();
    await Promise.all(recipients.map((recipient) => smtp.waitFor((message) => message.to === recipient)));
    await Promise.all(workers.map((each) => each.stop()));
    for (const recipient of recipients) assert.equal(smtp.messages.filter((message) => message.to === recipient).length, 1);
  });
});

describe('the file transport', () => {
  it('writes each message as an .eml file and logs its path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mail-'));
    const lines: string[] = [];
    const transport = createFileTransport(join(dir, 'mail'), createLogger('info', (line) => lines.push(line)));
    await transport.send({ messageId: '<1@test>', from: 'a@b.c', to: 'x@y.z', subject: 'Hi', text: 'Hello there', html: '<p>Hello there</p>' });
    transport.close();
    const [file] = await readdir(join(dir, 'mail'));
    assert.match(file!, /\.eml$/);
    const raw = await readFile(join(dir, 'mail', file!), 'utf8');
    assert.match(raw, /Subject: Hi/);
    assert.match(raw, /Hello there/);
    assert.match(raw, /^Auto-Submitted: auto-generated$/m, 'RFC 3834, as over SMTP');
    assert.equal(JSON.parse(lines[0]!).path, join(dir, 'mail', file!));
    await rm(dir, { recursive: true });
  });
});

describe('registration mail end to end', () => {
  it('sends the code message to the address given, from MAIL_FROM', async () => {
    const user = uniqueUser();
    const code = await requestCode(app, user);
    const mail = app.smtp.messages.find((message) => message.text.includes(code))!;
    assert.match(mail.raw, /From: Accounts <no-reply@localhost>/);
  });
});
