import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import postgres from 'postgres';
import { connectDatabase } from '../../src/storage/db.ts';
import { loadMigrations, migrate } from '../../src/storage/migrations.ts';
import { deleteAccount, emailChangeBody, enableTotp, passwordGrant } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { form } from '../helpers/http.ts';
import { codeIn } from '../helpers/smtp.ts';
import { requestCode, startTestService, uniqueUser, type TestService } from '../helpers/service.ts';
import { waitUntil } from '../helpers/wait.ts';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.ts';

// A statement that scans a table costs more as the table grows: the deletion once scanned the
// whole outbox, sent mail included, and only a benchmark noticed. This runs every path once on a
// service whose connections price table scans out (enable_seqscan = off, a connection parameter
// in DATABASE_URL), so that PostgreSQL scans a table only where no index can serve the
// statement, and then reads PostgreSQL's own count of scans per table. Not in the run through
// PgBouncer: it refuses startup parameters it does not know.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let admin: postgres.Sql;
let app: TestService;
let receiver: Receiver;
const metricsToken = 'metrics-token-0123456789';
before(async () => {
  database = await createTestDatabase();
  const url = new URL(database.url);
  url.searchParams.set('enable_seqscan', 'off');
  // Migrated apart, so that the scans of building the schema are counted before the service starts.
  const migrating = connectDatabase(database.url);
  await migrate(migrating, await loadMigrations());
  await migrating.end();
  // Its own reads price scans out too, and go by index, so that they count none.
  admin = postgres(url.toString(), { max: 1, onnotice: () => {} });
  baseline = await scansOnceReported();
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  receiver = await startReceiver(secret);
  app = await startTestService({ databaseUrl: url.toString(), env: { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, METRICS_TOKEN: metricsToken }, webhooks: { pollMs: 100 } });
});
after(async () => {
  await receiver.stop();
  await admin.end();
  await database.drop();
});

/**
 * Table scans per table, once every other connection to the database has ended: a backend
 * reports its counts when it ends, and while it lives only when idle, up to 10 s late.
 * Autovacuum, which may visit the database meanwhile, counts no scans and is not waited for.
 */
async function scansOnceReported(): Promise<Record<string, number>> {
  await waitUntil(async () => (await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)[0]!.n === 0);
  // A backend reports as it ends, before it leaves pg_stat_activity; a moment more all the same.
  await delay(200);
  const rows = await admin`SELECT relname, seq_scan FROM pg_stat_user_tables`;
  return Object.fromEntries(rows.map((row) => [row.relname as string, Number(row.seq_scan)]));
}
let baseline: Record<string, number>;

const mailTo = (to: string, subject: RegExp) => app.smtp.waitFor((message) => message.to === to && subject.test(message.subject));

describe('table scans', () => {
  it('no path, worker or sweep scans a table: every statement finds its rows by index', async () => {
    const user = uniqueUser('scans');
    const other = uniqueUser('scans');
    const code = await requestCode(app, user);
    assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204);
    assert.equal((await app.call('POST', '/acc/reg/code', { json: { ...other, name: user.name } })).status, 409, 'a taken name');
    assert.equal((await app.call('POST', '/acc/reg/code', { json: uniqueUser('scans') })).status, 204, 'a request left unconfirmed');
    const signIn = (password = user.pwd, otp?: string) => passwordGrant(app, user.name, password, { otp });
    assert.equal((await signIn('wrong-password')).status, 400);
    assert.equal((await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: 'nobody-here', password: 'wrong-password' } })).status, 400);
    const first = (await signIn()).json;
    const refreshed = (await app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: first.refresh_token }))).json;
    assert.equal((await app.call('POST', '/auth/token', form({ grant_type: 'refresh_token', refresh_token: 'not-a-token-at-all' }))).status, 400);
    const token = refreshed.access_token as string;
    for (const path of ['/acc/me', '/acc/me/sessions', '/acc/me/events']) assert.equal((await app.call('GET', path, { token })).status, 200, path);
    const second = (await signIn()).json;
    const sid = JSON.parse(Buffer.from((second.access_token as string).split('.')[1]!, 'base64url').toString()).sid as string;
    assert.equal((await app.call('DELETE', `/acc/me/sessions/${sid}`, { token })).status, 204);
    assert.equal((await app.call('POST', '/auth/revoke', form({ token: refreshed.refresh_token }))).status, 200);
    let current = (await signIn()).json.access_token as string;
    assert.equal((await app.call('DELETE', '/acc/me/sessions', { token: current })).status, 204);

    current = (await signIn()).json.access_token as string;
    assert.equal((await app.call('PUT', '/acc/me/pwd', { token: current, json: { old_pwd: user.pwd, new_pwd: 'scans-password-2' } })).status, 204);
    user.pwd = 'scans-password-2';
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
    assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: 'nobody-here@example.com' } })).status, 204);
    const reset = await mailTo(user.email, /reset/i);
    assert.equal((await app.call('POST', '/acc/pwd', { json: { code: codeIn(reset), new_pwd: 'scans-password-3' } })).status, 204);
    user.pwd = 'scans-password-3';

    current = (await signIn()).json.access_token as string;
    const newEmail = `${uniqueUser('scans').name}@example.com`;
    assert.equal((await app.call('POST', '/acc/me/email', { token: current, json: { pwd: user.pwd, email: newEmail } })).status, 204);
    const change = await mailTo(newEmail, /.*/);
    assert.equal((await app.call('POST', '/acc/email', { json: await emailChangeBody(app, codeIn(change)) })).status, 204);
    user.email = newEmail;

    current = (await signIn()).json.access_token as string;
    const { recoveryCodes } = await enableTotp(app, current, user);
    assert.equal((await signIn(user.pwd, '000000')).status, 400);
    current = (await signIn(user.pwd, recoveryCodes[0])).json.access_token as string;
    assert.equal((await app.call('DELETE', '/acc/me/totp', { token: current, json: { pwd: user.pwd, otp: recoveryCodes[1] } })).status, 204);

    current = (await signIn()).json.access_token as string;
    assert.equal((await deleteAccount(app, current, user)).status, 204);

    // The workers (mail, webhooks, the request resolver) finish what the requests queued; then
    // the sweep, as it runs every minute.
    const queued = async () => {
      const [row] = await admin`
        SELECT (SELECT id FROM registration_requests ORDER BY id LIMIT 1) AS registration,
               (SELECT id FROM reset_requests ORDER BY id LIMIT 1) AS reset,
               (SELECT id FROM outbox WHERE state = 'pending' ORDER BY next_attempt_at LIMIT 1) AS mail,
               (SELECT id FROM webhook_events WHERE state = 'pending' ORDER BY next_attempt_at LIMIT 1) AS webhook`;
      return Object.values(row!).some((id) => id !== null);
    };
    await waitUntil(async () => !(await queued()));
    assert.ok(receiver.received.length > 0, 'webhooks were delivered');
    await app.service.sweep();
    assert.equal((await app.call('GET', '/metrics', { token: metricsToken })).status, 200, 'the gauges a scrape reads');
    // Ending the service's connections makes their backends report their counts.
    await app.stop();
    const now = await scansOnceReported();
    // The applied migrations are read whole at start-up: a row per migration, not per use.
    const grown = Object.keys(now).filter((table) => table !== 'schema_migrations' && now[table]! > (baseline[table] ?? 0)).map((table) => `${table}: ${now[table]! - (baseline[table] ?? 0)}`);
    assert.deepEqual(grown, [], 'tables that a statement scanned (start-up included)');
  });
});
