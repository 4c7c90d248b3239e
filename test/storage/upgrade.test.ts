// A deployed database from before the registration, session and lifecycle migrations (002), with
// a pending registration and an active account in it, brought up to date by the service's own
// start: the data must keep working, and only what the README's upgrade notes say may change.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { createPasswordHasher } from '../../src/core/passwords.ts';
import { connectDatabase } from '../../src/storage/db.ts';
import { loadMigrations, migrate } from '../../src/storage/migrations.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { startTestService, testSecret } from '../helpers/service.ts';

describe('upgrading a database that holds data', () => {
  it('keeps pending registrations and accounts working, and refuses tokens from before sessions', async () => {
    const database = await createTestDatabase();
    const old = connectDatabase(database.url);
    try {
      await migrate(old, (await loadMigrations()).filter((migration) => migration.version <= 2));
      const hash = await createPasswordHasher({ ln: 4, r: 8, p: 1 }).hash('old-password-1');
      const code = 'ABCD-EFGH-IJKL-MNOP';
      const now = new Date();
      await old`
        INSERT INTO accounts (name, email, password_hash, activated_at)
        VALUES ('active-before', 'Active-Before@example.com', ${hash}, ${now})`;
      await old`
        INSERT INTO accounts (name, email, password_hash, code_hash, code_sent_at, code_expires_at)
        VALUES ('pending-before', 'pending-before@example.com', ${hash}, ${createHash('sha256').update(code).digest()}, ${now}, ${new Date(now.getTime() + 1800_000)})`;
      await old`INSERT INTO login_failures (key, failures, updated_at) VALUES ('account:1', 3, ${now})`;
      const [{ id }] = (await old`SELECT id FROM accounts WHERE name = 'active-before'`) as unknown as [{ id: string }];
      await old.end();

      const app = await startTestService({ databaseUrl: database.url });
      try {
        assert.equal((await app.call('POST', '/acc/reg', { json: { code } })).status, 204, 'the pending registration activates with its old code');
        const signIn = (username: string) => app.call('POST', '/auth/token', { json: { grant_type: 'password', username, password: 'old-password-1' } });
        assert.equal((await signIn('pending-before')).status, 200);
        const tokens = await signIn('active-before@example.com');
        assert.equal(tokens.status, 200, 'the account signs in with its password');
        const me = await app.call('GET', '/acc/me', { token: tokens.json.access_token });
        assert.match(me.json.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a random public id');
        assert.equal(me.json.email, 'Active-Before@example.com');

        // A token as the service issued them before sessions: sub = row id, ver = credential version.
        const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
        const iat = Math.floor(Date.now() / 1000);
        const data = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode({ sub: id, ver: 1, iat, exp: iat + 3600 })}`;
        const oldToken = `${data}.${createHmac('sha256', testSecret).update(data).digest('base64url')}`;
        assert.equal((await app.call('GET', '/acc/me', { token: oldToken })).status, 401, 'clients sign in again after the upgrade');
      } finally {
        await app.stop();
      }
    } finally {
      await database.drop();
    }
  });
});
