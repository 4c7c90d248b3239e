import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { createTestDatabase } from '../helpers/database.ts';
import { call } from '../helpers/http.ts';
import { runMain, type Running } from '../helpers/process.ts';
import { testEncryptionKeys, testSecret } from '../helpers/service.ts';
import { codeIn, startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { untilQueuesDrained, waitUntil } from '../helpers/wait.ts';

describe('several instances on one database', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let smtp: TestSmtp;
  let sql: postgres.Sql;
  const running: Running[] = [];
  const env = () => ({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SMTP_URL: smtp.url, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1', RATE_LIMIT: '0' });
  const start = async () => {
    const instance = runMain(env());
    running.push(instance);
    return { instance, url: ((await instance.waitFor(/"msg":"listening"/)) as { url: string }).url };
  };
  before(async () => {
    database = await createTestDatabase();
    smtp = await startTestSmtp();
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
  });
  after(async () => {
    for (const instance of running) instance.kill('SIGKILL');
    await Promise.all(running.map((instance) => instance.exit));
    await sql.end();
    await smtp.stop();
    await database.drop();
  });

  it('keep names unique and send every message once under concurrent use, with migrations applied once', async () => {
    const urls = (await Promise.all([start(), start(), start()])).map((started) => started.url);
    const applied = running.flatMap((instance) => instance.lines.filter((line) => line.includes('"msg":"migrations applied"')));
    assert.equal(applied.length, 1, 'one instance applied the migrations; the others found them done');

    // Twelve addresses race for four names, spread over the three instances.
    const attempts = Array.from({ length: 12 }, (_, index) => ({ url: urls[index % 3]!, json: { name: `multi-${index % 4}`, email: `multi-${index}@example.com`, pwd: 'quiet-harbor-1' } }));
    const statuses = await Promise.all(attempts.map(({ url, json }) => call(url, 'POST', '/acc/reg/code', { json }).then((response) => response.status)));
    assert.equal(statuses.filter((status) => status === 204).length, 4, `statuses: ${statuses}`);
    assert.equal(statuses.filter((status) => status === 409).length, 8, `statuses: ${statuses}`);

    const winners = attempts.filter((_, index) => statuses[index] === 204).map(({ json }) => json);
    const codes = await Promise.all(winners.map(async (winner) => codeIn(await smtp.waitFor((message) => message.to === winner.email))));
    // Each code is sent to all three instances at once: exactly one activation wins.
    for (const code of codes) {
      const results = await Promise.all(urls.map((url) => call(url, 'POST', '/acc/reg', { json: { code } })));
      assert.deepEqual(results.map((result) => result.status).sort(), [204, 404, 404]);
    }
    // Concurrent password changes with one token, one per instance: one wins.
    const winner = winners[0]!;
    const token = (await call(urls[0]!, 'POST', '/auth/token', { json: { grant_type: 'password', username: winner.name, password: winner.pwd } })).json.access_token as string;
    const changes = await Promise.all(urls.map((url, index) => call(url, 'PUT', '/acc/me/pwd', { token, json: { old_pwd: winner.pwd, new_pwd: `new-secret-${index}` } })));
    assert.deepEqual(changes.map((change) => change.status).sort(), [204, 401, 401]);

    const expected = winners.length * 2 + 1;
    await untilQueuesDrained(sql);
    const ids = smtp.messages.map((message) => message.messageId);
    assert.equal(ids.length, expected, 'no message twice, none missing');
    assert.equal(new Set(ids).size, ids.length);
    const [row] = await sql`SELECT count(*)::int AS n FROM accounts`;
    assert.equal(row!.n, 4);
  });

  it('loses nothing answered 204 when an instance is killed mid-burst, and its outbox resumes', async () => {
    const { instance, url } = await start();
    smtp.delayNext(2_000);
    const burst = Array.from({ length: 60 }, (_, index) => ({ name: `crash-${index}`, email: `crash-${index}@example.com`, pwd: 'quiet-harbor-1' }));
    let done = 0;
    let tenDone: () => void = () => {};
    const someDone = new Promise<void>((resolve) => (tenDone = resolve));
    const answers = burst.map((json) =>
      call(url, 'POST', '/acc/reg/code', { json }).then(
        (response) => (response.status === 204 && ++done === 10 && tenDone(), response.status),
        () => 0,
      ),
    );
    // Killed once ten registrations are answered 204, with the rest of the burst in flight
    // (some of which the bounded hashing queue answers 503).
    await someDone;
    instance.kill('SIGKILL');
    const statuses = await Promise.all(answers);
    await instance.exit;
    const answered = burst.filter((_, index) => statuses[index] === 204);
    assert.ok(answered.length >= 10);

    // A request answered 204 is stored as recorded (registration_requests) or, once the worker
    // resolved it, as a registration with its code and its message, in one transaction (the
    // message may be sent already, and a sent message keeps no address: the mail below shows it).
    const requested = new Set((await sql`SELECT address FROM registration_requests WHERE name LIKE 'crash-%'`).map((row) => row.address as string));
    const rows = await sql`
      SELECT a.email, (SELECT count(*)::int FROM one_time_codes c WHERE c.account_id = a.id) AS codes
      FROM accounts a WHERE a.name LIKE 'crash-%'`;
    const stored = new Map(rows.map((row) => [row.email as string, row.codes as number]));
    for (const { email } of answered) assert.ok(requested.has(email) || stored.get(email) === 1, `${email} was answered 204 and must be stored`);
    for (const [email, codes] of stored) assert.equal(codes, 1, `${email} is stored with exactly one code, never half`);

    await start();
    await waitUntil(async () => {
      const [pending] = await sql`SELECT (SELECT count(*) FROM outbox WHERE state = 'pending') + (SELECT count(*) FROM registration_requests) AS n`;
      return Number(pending!.n) === 0;
    }, 20_000);
    for (const email of requested) stored.set(email, 1);
    for (const email of stored.keys()) assert.ok(smtp.messages.some((message) => message.to === email), `${email} got its code after the restart`);
  });
});
