import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { deriveKeys } from '../../src/keyed-hashes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { registerAndSignIn, startTestService, testSecret, type TestService } from '../helpers/service.ts';

// The README's rotation procedure: TOKEN_SECRET=new,old for a while, then new alone. Throttles,
// cooldowns and daily caps must count on through it (they were keyed by the first secret).

const newSecret = 'a-brand-new-token-secret-0123456789abcdef';
let database: Awaited<ReturnType<typeof createTestDatabase>>;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database.drop();
});

const start = (tokenSecret: string) => startTestService({ databaseUrl: database.url, env: { TOKEN_SECRET: tokenSecret, LOGIN_FAILURES_PER_HOUR: '5' } });
const guess = (app: TestService, username: string) => app.call('POST', '/auth/token', { json: { grant_type: 'password', username, password: 'wrong-guess' } });
const resetCode = (app: TestService, email: string) => app.call('POST', '/acc/pwd/code', { json: { email } });

describe('TOKEN_SECRET rotation', () => {
  it('keeps the sign-in throttle and the address cooldown counting, with new,old and then new alone', async () => {
    let app = await start(testSecret);
    const { user } = await registerAndSignIn(app);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i += 1) statuses.push((await guess(app, user.name)).status);
    assert.deepEqual(statuses.slice(-3), [429, 429, 429], 'throttled before the rotation');
    assert.equal((await resetCode(app, user.email)).status, 204);
    assert.equal((await resetCode(app, user.email)).status, 429, 'the cooldown runs');
    await app.stop();

    for (const secrets of [`${newSecret},${testSecret}`, newSecret]) {
      app = await start(secrets);
      assert.equal((await guess(app, user.name)).status, 429, `still throttled with TOKEN_SECRET=${secrets === newSecret ? 'new' : 'new,old'}`);
      assert.equal((await resetCode(app, user.email)).status, 429, 'and the cooldown still runs');
      await app.stop();
    }
  });

  it('stores the keys only sealed, and refuses to start when no secret opens them', async () => {
    const app = await start(newSecret);
    const rows = await app.service.sql`SELECT sealed_key FROM keyed_hash_keys`;
    const plain = Object.values(deriveKeys(Buffer.from(testSecret))).map((key) => key.toString('base64'));
    for (const row of rows) {
      const stored = row.sealed_key as Buffer;
      assert.ok(plain.every((key) => !stored.includes(Buffer.from(key)) && !stored.includes(Buffer.from(key, 'base64'))), 'no key in plain text');
    }
    await app.stop();
    await assert.rejects(start('yet-another-secret-nobody-knows-0123456789'), /keyed_hash_keys\) open with no TOKEN_SECRET/);
  });
});
