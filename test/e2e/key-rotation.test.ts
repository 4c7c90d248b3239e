import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../src/config/config.ts';
import { accountActiveMail } from '../../src/mail/messages.ts';
import { enqueueMail } from '../../src/mail/outbox.ts';
import { createSealer, sealedKeyId } from '../../src/core/sealing.ts';
import { createTokenService, hmacTokenKeys } from '../../src/core/tokens.ts';
import { connectDatabase } from '../../src/storage/db.ts';
import { enableTotp } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { runMain } from '../helpers/process.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { builtInMailer, registerAndSignIn, startTestService, testEncryptionKeys, testSecret, uniqueUser, type TestService } from '../helpers/service.ts';

// The rotations of docs/operations.md ("Keys"): ENCRYPTION_KEYS new,old, then `reseal`, then new
// alone; TOKEN_SECRET new,old, then new alone. Throughout, the second factor, the sign-in
// throttle, the address cooldown and queued mail keep working, and after each the old key can
// go: nothing in the database depends on it, and a token it signed is refused.

const newKeys = `next:${randomBytes(32).toString('base64')}`;
const newSecret = 'a-brand-new-token-secret-0123456789abcdef';
let database: Awaited<ReturnType<typeof createTestDatabase>>;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database.drop();
});

const start = (env: Record<string, string>) => startTestService({ databaseUrl: database.url, env: { LOGIN_FAILURES_PER_HOUR: '5', TRUST_PROXY: '1', ...env } });
let stranger = 0;
/** A wrong guess from a network never seen: the name's budget (5 an hour) bounds it, whatever time the restarts take. */
const guess = (app: TestService, username: string) =>
  app.call('POST', '/auth/token', { json: { grant_type: 'password', username, password: 'wrong-guess' }, headers: { 'x-forwarded-for': `203.0.113.${(stranger += 1)}` } });
const resetCode = (app: TestService, email: string) => app.call('POST', '/acc/pwd/code', { json: { email } });
const signInWithOtp = (app: TestService, user: { name: string; pwd: string }, secret: string) =>
  app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd, otp: referenceTotp(secret, app.clock.now().getTime() / 1000) } });

/** The ids of the keys that sealed every stored value (null: not a value of the current format). */
async function sealingKeyIds(app: TestService): Promise<(string | null)[]> {
  const rows = await app.service.sql<{ sealed: Buffer }[]>`
    SELECT sealed_secret AS sealed FROM second_factors
    UNION ALL SELECT sealed_content FROM outbox WHERE sealed_content IS NOT NULL
    UNION ALL SELECT sealed_key FROM keyed_hash_keys
    UNION ALL SELECT sealed_private_key FROM signing_keys`;
  return [...new Set(rows.map(({ sealed }) => sealedKeyId(sealed)))].sort();
}

/** Runs `main.ts reseal` as an operator would, with the service's environment; its exit code and output. */
async function reseal(env: Record<string, string>): Promise<{ code: number | null; output: string[] }> {
  const running = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ...env }, ['reseal']);
  return { code: await running.exit, output: running.lines };
}

describe('ENCRYPTION_KEYS rotation', () => {
  it('new,old, then reseal, then new alone: the factor, the throttle, the cooldown and queued mail all carry on', async () => {
    let app = await start({ ENCRYPTION_KEYS: testEncryptionKeys });
    const { user, token } = await registerAndSignIn(app);
    const { secret } = await enableTotp(app, token, user);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i += 1) statuses.push((await guess(app, user.name)).status);
    assert.deepEqual(statuses.slice(-2), [429, 429], 'throttled before the rotation');
    assert.equal((await resetCode(app, user.email)).status, 204);
    assert.equal((await resetCode(app, user.email)).status, 429, 'the cooldown runs');
    assert.deepEqual(await sealingKeyIds(app), ['test']);
    await app.stop();

    // A message queued while no instance runs, under the old key.
    const recipient = `${uniqueUser('queued').name}@example.com`;
    const sql = connectDatabase(database.url);
    await sql.begin((tx) => enqueueMail(tx, accountActiveMail({ email: recipient, name: 'queued', locale: null }), builtInMailer(createSealer(parseConfig({ ENCRYPTION_KEYS: testEncryptionKeys }).encryptionKeys!)), new Date()));
    const [{ sealed }] = (await sql`
      SELECT (SELECT count(*) FROM second_factors) + (SELECT count(sealed_content) FROM outbox) + (SELECT count(*) FROM keyed_hash_keys) AS sealed`) as unknown as [{ sealed: string }];
    await sql.end();

    const both = `${newKeys},${testEncryptionKeys}`;
    const resealed = await reseal({ ENCRYPTION_KEYS: both });
    assert.equal(resealed.code, 0, resealed.output.join('\n'));
    assert.deepEqual(JSON.parse(resealed.output.at(-1)!), { resealed: Number(sealed), unopenable: {} }, 'the factor, the queued mail and the three hash keys');
    assert.ok(Number(sealed) >= 5);

    app = await start({ ENCRYPTION_KEYS: newKeys });
    try {
      assert.deepEqual(await sealingKeyIds(app), ['next'], 'nothing depends on the old key');
      assert.equal((await guess(app, user.name)).status, 429, 'still throttled');
      assert.equal((await resetCode(app, user.email)).status, 429, 'the cooldown still runs');
      app.clock.advance(30);
      const signedIn = await signInWithOtp(app, { name: user.email, pwd: user.pwd }, secret);
      assert.equal(signedIn.status, 200, `the factor opens under the new key: ${signedIn.text}`);
      const mail = await app.smtp.waitFor((message) => message.to === recipient);
      assert.match(mail.subject, /active/i, 'the queued message is sent');
    } finally {
      await app.stop();
    }
  });

  it('seals a factor read under an old key again at once, without the command', async () => {
    const own = await createTestDatabase();
    const start = (env: Record<string, string>) => startTestService({ databaseUrl: own.url, env });
    let app = await start({ ENCRYPTION_KEYS: testEncryptionKeys });
    const { user, token } = await registerAndSignIn(app);
    const { secret } = await enableTotp(app, token, user);
    await app.stop();
    app = await start({ ENCRYPTION_KEYS: `${newKeys},${testEncryptionKeys}` });
    try {
      const factorKey = async () => {
        const [row] = await app.service.sql<{ sealed: Buffer }[]>`SELECT sealed_secret AS sealed FROM second_factors JOIN accounts ON accounts.id = account_id WHERE name = ${user.name}`;
        return sealedKeyId(row!.sealed);
      };
      assert.equal(await factorKey(), 'test');
      app.clock.advance(30);
      assert.equal((await signInWithOtp(app, user, secret)).status, 200);
      assert.equal(await factorKey(), 'next', 'sealed again by the sign-in that read it');
    } finally {
      await app.stop();
      await own.drop();
    }
  });

  it('refuses to drop a key that still opens something: reseal exits 1 and names the table', async () => {
    const app = await start({ ENCRYPTION_KEYS: newKeys });
    await app.stop();
    const lost = await reseal({ ENCRYPTION_KEYS: `other:${randomBytes(32).toString('base64')}` });
    assert.equal(lost.code, 1);
    assert.match(JSON.parse(lost.output.at(-1)!).unopenable.keyed_hash_keys.toString(), /^3$/);
  });
});

describe('TOKEN_SECRET rotation', () => {
  it('new,old, then new alone: old tokens verify, then are refused; nothing else depends on the secret', async () => {
    const keys = { ENCRYPTION_KEYS: newKeys };
    let app = await start({ ...keys, TOKEN_SECRET: testSecret });
    const { user, token } = await registerAndSignIn(app);
    const { secret } = await enableTotp(app, token, user);
    for (let i = 0; i < 8; i += 1) await guess(app, user.name);
    await app.stop();

    app = await start({ ...keys, TOKEN_SECRET: `${newSecret},${testSecret}` });
    const fresh = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.email, password: user.pwd, otp: referenceTotp(secret, app.clock.now().getTime() / 1000 + 30) } });
    assert.equal(fresh.status, 200, fresh.text);
    const { sub, sid } = JSON.parse(Buffer.from(fresh.json.access_token.split('.')[1], 'base64url').toString());
    const oldSigned = createTokenService({ keys: hmacTokenKeys([Buffer.from(testSecret)]), ttlSeconds: 900, issuer: 'account-service', audience: null }).issueToken(sub, sid, new Date()).token;
    assert.equal((await app.call('GET', '/acc/me', { token: oldSigned })).status, 200, 'new,old: a token signed with the old secret verifies');
    await app.stop();

    app = await start({ ...keys, TOKEN_SECRET: newSecret });
    try {
      assert.equal((await app.call('GET', '/acc/me', { token: oldSigned })).status, 401, 'new alone: refused');
      assert.equal((await app.call('GET', '/acc/me', { token: fresh.json.access_token })).status, 200, 'tokens of the new secret verify');
      assert.equal((await guess(app, user.name)).status, 429, 'the throttle is not reset');
      app.clock.advance(60);
      assert.equal((await signInWithOtp(app, { name: user.email, pwd: user.pwd }, secret)).status, 200, 'the factor works');
    } finally {
      await app.stop();
    }
  });
});
