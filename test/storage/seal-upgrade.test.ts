// A database of the version before sql/017, whose TOTP secrets, queued mail and keyed-hash keys
// were sealed under a key derived from TOKEN_SECRET, brought up to date by the service's own
// start: every second factor keeps working, no throttle or cooldown resets, queued mail is sent,
// and afterwards TOKEN_SECRET opens nothing.
//
// The data is made through the API, then written back in the old format, as the version before
// sealed it (IV | tag | ciphertext, AES-256-GCM, key HKDF(TOKEN_SECRET, '', 'account-service
// outbox v1'), TOTP secrets and hash keys as base64 text), with the migration undone.
import assert from 'node:assert/strict';
import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseConfig } from '../../src/config/config.ts';
import { accountActiveMail } from '../../src/mail/messages.ts';
import { enqueueMail } from '../../src/mail/outbox.ts';
import { createSealer } from '../../src/core/sealing.ts';
import { connectDatabase } from '../../src/storage/db.ts';
import { enableTotp } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { builtInMailer, registerAndSignIn, startTestService, testEncryptionKeys, testSecret, uniqueUser, type TestService } from '../helpers/service.ts';

const legacyKey = Buffer.from(hkdfSync('sha256', Buffer.from(testSecret), Buffer.alloc(0), 'account-service outbox v1', 32));
function legacySeal(plaintext: Buffer): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', legacyKey, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

describe('upgrading sealed values from TOKEN_SECRET to ENCRYPTION_KEYS (sql/017)', () => {
  it('keeps every factor, throttle, cooldown and queued message, and leaves nothing that TOKEN_SECRET opens', async () => {
    const database = await createTestDatabase();
    const sealer = createSealer(parseConfig({ ENCRYPTION_KEYS: testEncryptionKeys }).encryptionKeys!);
    const start = (env: Record<string, string> = {}) => startTestService({ databaseUrl: database.url, env: { LOGIN_FAILURES_PER_HOUR: '5', TRUST_PROXY: '1', ...env } });
    let stranger = 0;
    // From networks never seen: the name's budget (5 an hour) bounds them, whatever time the restarts take.
    const guess = (app: TestService, username: string) =>
      app.call('POST', '/auth/token', { json: { grant_type: 'password', username, password: 'wrong' }, headers: { 'x-forwarded-for': `203.0.113.${(stranger += 1)}` } });
    let app = await start();
    try {
      const { user, token } = await registerAndSignIn(app);
      const { secret } = await enableTotp(app, token, user);
      for (let i = 0; i < 8; i += 1) await guess(app, user.name);
      assert.equal((await guess(app, user.name)).status, 429);
      assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 204);
      assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 429);
      await app.stop();

      const sql = connectDatabase(database.url);
      const recipient = `${uniqueUser('queued').name}@example.com`;
      await sql.begin((tx) => enqueueMail(tx, accountActiveMail({ email: recipient, name: 'queued', locale: null }), builtInMailer(sealer), new Date()));
      // Back to the version before: the old format, and sql/017 not applied.
      for (const row of await sql<{ purpose: string; sealed: Buffer }[]>`SELECT purpose, sealed_key AS sealed FROM keyed_hash_keys`) {
        const key = sealer.open(row.sealed, 'keyed-hash-key', row.purpose)!.plaintext;
        await sql`UPDATE keyed_hash_keys SET sealed_key = ${legacySeal(Buffer.from(key.toString('base64')))} WHERE purpose = ${row.purpose}`;
      }
      for (const row of await sql<{ id: string; sealed: Buffer }[]>`SELECT account_id::text AS id, sealed_secret AS sealed FROM second_factors`) {
        const plain = sealer.open(row.sealed, 'totp-secret', row.id)!.plaintext;
        await sql`UPDATE second_factors SET sealed_secret = ${legacySeal(Buffer.from(plain.toString('base64')))} WHERE account_id = ${row.id}`;
      }
      for (const row of await sql<{ id: string; messageId: string; sealed: Buffer }[]>`SELECT id::text, message_id AS "messageId", sealed_content AS sealed FROM outbox WHERE sealed_content IS NOT NULL`) {
        const plain = sealer.open(row.sealed, 'mail', row.messageId)!.plaintext;
        await sql`UPDATE outbox SET sealed_content = ${legacySeal(plain)} WHERE id = ${row.id}`;
      }
      await sql`DROP TABLE signing_keys`;
      await sql`DELETE FROM schema_migrations WHERE version = 17`;
      await sql.end();

      app = await start();
      const versions = await app.service.sql<{ version: number }[]>`
        SELECT get_byte(sealed_key, 0) AS version FROM keyed_hash_keys
        UNION ALL SELECT get_byte(sealed_secret, 0) FROM second_factors
        UNION ALL SELECT get_byte(sealed_content, 0) FROM outbox WHERE sealed_content IS NOT NULL`;
      assert.ok(versions.length >= 5 && versions.every((row) => row.version === 2), 'every value sealed anew');
      assert.ok(app.logs.some((line) => line.includes('sealed values moved from TOKEN_SECRET to ENCRYPTION_KEYS')));
      assert.match((await app.smtp.waitFor((message) => message.to === recipient)).subject, /active/i, 'queued mail is sent');
      await app.stop();

      // TOKEN_SECRET opens nothing any more: another one changes nothing of what was sealed.
      app = await start({ TOKEN_SECRET: 'a-token-secret-never-used-before-0123456789' });
      assert.equal((await guess(app, user.name)).status, 429, 'the sign-in throttle still counts');
      assert.equal((await app.call('POST', '/acc/pwd/code', { json: { email: user.email } })).status, 429, 'and the address cooldown');
      app.clock.advance(30);
      const signedIn = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.email, password: user.pwd, otp: referenceTotp(secret, app.clock.now().getTime() / 1000) } });
      assert.equal(signedIn.status, 200, `the second factor works: ${signedIn.text}`);
    } finally {
      await app.stop().catch(() => {});
      await database.drop();
    }
  });
});
