import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { decodeWebhookSecret } from '../../src/config/config.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { connectDatabase, type Sql } from '../../src/storage/db.ts';
import { loadMigrations, migrate } from '../../src/storage/migrations.ts';
import { createWebhookWorker, deleteDeliveredWebhooks } from '../../src/webhooks/delivery.ts';
import { enabledWebhooks, webhookEventTypes, type WebhookEventType } from '../../src/webhooks/events.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { waitUntil } from '../helpers/wait.ts';
import { acceptedEvents, startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';

const secret = `whsec_${randomBytes(32).toString('base64')}`;
let database: { url: string; drop(): Promise<void> };
let sql: Sql;
let receiver: Receiver;
before(async () => {
  database = await createTestDatabase();
  sql = connectDatabase(database.url);
  await migrate(sql, await loadMigrations());
  receiver = await startReceiver(secret);
});
after(async () => {
  await sql.end();
  await database.drop();
  await receiver.stop();
});

const queue = enabledWebhooks(() => {});
const types: WebhookEventType[] = ['account.activated', 'sessions.revoked', 'password.changed', 'password.reset', 'account.deleted'];

describe('the webhook worker', () => {
  it('shares the queue between instances: each event accepted once, each account in order', async () => {
    const accounts = Array.from({ length: 6 }, () => randomUUID());
    // Interleaved: every account's five events, queued one account after the other per type.
    for (const type of types) {
      for (const account of accounts) await sql.begin((tx) => queue.enqueue(tx, type, account, new Date()));
    }
    const options = { sql, url: receiver.url, keys: [decodeWebhookSecret(secret)!], clock: () => new Date(), log: createLogger('error', () => {}), pollMs: 50 };
    const workers = [createWebhookWorker(options), createWebhookWorker(options)];
    try {
      for (const worker of workers) worker.wake();
      await receiver.waitFor((received) => acceptedEvents(received).length === accounts.length * types.length);
      const accepted = acceptedEvents(receiver.received);
      assert.equal(new Set(accepted.map((event) => event.id)).size, accepted.length, 'no event accepted twice');
      for (const account of accounts) {
        assert.deepEqual(accepted.filter((event) => event.data.account_id === account).map((event) => event.type), types, `account ${account} in order`);
      }
      // account.deleted took its account's rows with it.
      await waitUntil(async () => (await sql`SELECT count(*)::int AS n FROM webhook_events`)[0]!.n === 0);
      await workers[0]!.refreshCounts();
      assert.deepEqual(workers[0]!.counts(), { pending: 0, failed: 0 });
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  });

  it('can store every event type the code sends (the check of the table lists them all)', async () => {
    const account = randomUUID();
    try {
      for (const type of webhookEventTypes) await sql.begin((tx) => queue.enqueue(tx, type, account, new Date()));
      assert.equal((await sql`SELECT count(*)::int AS n FROM webhook_events WHERE account = ${account}`)[0]!.n, webhookEventTypes.length);
    } finally {
      await sql`DELETE FROM webhook_events WHERE account = ${account}`;
    }
  });

  it("keeps an account's later events from being due before an earlier one that is retried, so that claims do not read past them", async () => {
    const account = randomUUID();
    const other = randomUUID();
    const events = async (of: string) => sql`SELECT id, attempts, next_attempt_at FROM webhook_events WHERE account = ${of} AND state = 'pending' ORDER BY id`;
    receiver.mode = 'fail';
    // All three are queued before the worker starts: a first attempt deferred while the second
    // is being queued cannot move it (neither sees the other), which is the claim's to order.
    for (const type of types.slice(0, 3)) await sql.begin((tx) => queue.enqueue(tx, type, account, new Date()));
    const worker = createWebhookWorker({ sql, url: receiver.url, keys: [decodeWebhookSecret(secret)!], clock: () => new Date(), log: createLogger('error', () => {}), pollMs: 50, backoffBaseMs: 60_000 });
    try {
      worker.wake();
      await waitUntil(async () => (await events(account))[0]!.attempts === 1);
      const [first, ...later] = await events(account);
      assert.ok(first!.next_attempt_at.getTime() > Date.now() + 30_000, 'the first is deferred');
      assert.deepEqual(later.map((event) => event.next_attempt_at.getTime()), [first!.next_attempt_at.getTime(), first!.next_attempt_at.getTime()], 'the later ones moved on with it');
      // Queued after the deferral: no earlier than the first's next attempt (the worker stopped,
      // so that it does not try the other account's event meanwhile).
      await worker.stop();
      await sql.begin((tx) => queue.enqueue(tx, 'password.reset', account, new Date()));
      await sql.begin((tx) => queue.enqueue(tx, 'password.reset', other, new Date()));
      const queued = (await events(account)).at(-1)!;
      assert.equal(queued.next_attempt_at.getTime(), first!.next_attempt_at.getTime());
      assert.ok((await events(other))[0]!.next_attempt_at.getTime() <= Date.now(), "another account's event is due at once");
      const due = await sql`SELECT account FROM webhook_events WHERE state = 'pending' AND next_attempt_at <= now() AND account IN (${account}, ${other})`;
      assert.deepEqual(due.map((row) => row.account), [other], 'nothing of the waiting account is due');
    } finally {
      await worker.stop();
      receiver.mode = 'ok';
      await sql`DELETE FROM webhook_events WHERE account IN (${account}, ${other})`;
    }
  });

  it('sweeps delivered events after their retention, and keeps pending and failed ones', async () => {
    const account = randomUUID();
    await sql.begin((tx) => queue.enqueue(tx, 'password.changed', account, new Date()));
    await sql.begin((tx) => queue.enqueue(tx, 'password.reset', account, new Date()));
    await sql.begin((tx) => queue.enqueue(tx, 'sessions.revoked', account, new Date()));
    const [first, second] = await sql`SELECT id FROM webhook_events WHERE account = ${account} ORDER BY id`;
    await sql`UPDATE webhook_events SET state = 'delivered', body = NULL, delivered_at = now() - interval '8 days' WHERE id = ${first!.id}`;
    await sql`UPDATE webhook_events SET state = 'failed', last_error = 'HTTP 500' WHERE id = ${second!.id}`;
    assert.equal(await deleteDeliveredWebhooks(sql, new Date(Date.now() - 7 * 24 * 3600 * 1000)), 1);
    assert.deepEqual((await sql`SELECT state FROM webhook_events WHERE account = ${account} ORDER BY id`).map((row) => row.state), ['failed', 'pending']);
    await sql`DELETE FROM webhook_events WHERE account = ${account}`;
  });
  it('closes the answer once its status is known: a 200 MiB or trickled body holds no socket (issue 30)', async (t) => {
    // A receiver that answers 200 and then streams 200 MiB as fast as the socket takes it, or
    // trickles a byte a second: it counts what it wrote, and sees when the service closed.
    const total = 200 * 1024 * 1024;
    const answers: { written: number; closed: boolean }[] = [];
    const chunk = Buffer.alloc(64 * 1024, 120);
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', async () => {
        const answer = { written: 0, closed: false };
        answers.push(answer);
        const closed = once(res, 'close').then(() => {
          answer.closed = true;
        });
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
        const trickle = answers.length === 2;
        while (!answer.closed && answer.written < total) {
          const piece = trickle ? chunk.subarray(0, 1) : chunk;
          answer.written += piece.length;
          if (trickle) {
            res.write(piece);
            await delay(1000);
          } else if (!res.write(piece)) {
            await Promise.race([once(res, 'drain'), closed]);
          }
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => server.close(resolve).closeAllConnections()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const keys = [decodeWebhookSecret(secret)!];
    const log = createLogger('error', () => {});
    const worker = createWebhookWorker({ sql, url, keys, clock: () => new Date(), log, pollMs: 50 });
    t.after(() => worker.stop());
    const started = Date.now();
    for (const account of [randomUUID(), randomUUID()]) {
      await sql.begin((tx) => queue.enqueue(tx, 'account.activated', account, new Date()));
      worker.wake();
      const stateOf = async () => (await sql`SELECT state FROM webhook_events WHERE account = ${account}`)[0]?.state;
      await waitUntil(async () => (await stateOf()) === 'delivered', 30_000);
    }
    await waitUntil(async () => answers.length === 2 && answers.every((answer) => answer.closed), 30_000);
    assert.ok(Date.now() - started < 30_000, 'a liveness bound only: reading 200 MiB is not what takes the time');
    const [large, trickled] = answers;
    assert.ok(large!.written < total / 4, `the service closed the answer after ${large!.written} of ${total} bytes`);
    assert.ok(trickled!.written < 10, `the trickled answer was closed after ${trickled!.written} bytes, not read on`);
  });
});
