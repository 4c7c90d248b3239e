import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportedTables } from '../../src/features/export/document.ts';
import { enableTotp, eventsOf, signedIn, totpStepOf } from '../helpers/accounts.ts';
import { referenceTotp } from '../helpers/totp.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';

/**
 * POST /acc/me/export: everything kept about the account, never a secret, with the password and
 * the factor; the document is held to the schema, so that a new column must be placed.
 */
let app: TestService;
before(async () => {
  app = await startTestService();
});
after(() => app.stop());

describe('the export table', () => {
  it('places every column of every table that holds an account\'s rows, and names no column the schema lacks', async () => {
    const rows = await app.service.sql<Array<{ table: string; column: string }>>`
      SELECT table_name AS table, column_name AS column FROM information_schema.columns
      WHERE table_schema = 'public' AND (table_name = 'accounts' OR table_name IN (
        SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'account_id'))`;
    const schema = new Map<string, Set<string>>();
    for (const { table, column } of rows) schema.set(table, (schema.get(table) ?? new Set()).add(column));
    // Short-lived rows of a trip to a provider, never the account's data: a link in progress.
    schema.delete('oidc_attempts');
    schema.delete('oidc_codes');
    assert.deepEqual([...schema.keys()].sort(), Object.keys(exportedTables).sort(), 'every table with account rows');
    for (const [table, columns] of schema) {
      const placed = Object.keys(exportedTables[table as keyof typeof exportedTables].columns);
      assert.deepEqual(placed.sort(), [...columns].sort(), `${table}: each column exported or withheld with why`);
    }
  });

  it('is described field by field in docs/api.md', async () => {
    const { readFile } = await import('node:fs/promises');
    const api = await readFile(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const section = api.slice(api.indexOf('### Export'));
    for (const [table, { columns }] of Object.entries(exportedTables)) {
      for (const field of Object.values(columns)) {
        if (typeof field === 'string') assert.ok(section.includes(`\`${field}\``), `${table}: ${field}`);
      }
    }
  });
});

describe('POST /acc/me/export', () => {
  it('answers everything kept about the account and no secret, records it and tells the owner', async () => {
    const { user } = await registerAndSignIn(app);
    const tokens = await signedIn(app, user.name, user.pwd);
    const response = await app.call('POST', '/acc/me/export', { token: tokens.access_token, json: { pwd: user.pwd } });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.headers['cache-control'], 'no-store');
    const document = response.json;
    assert.equal(document.format, 'account-service-export/1');
    assert.equal(document.account.name, user.name);
    assert.equal(document.account.email, user.email);
    assert.equal(document.account.sign_in_notices, true);
    assert.equal(document.sessions.length, 2);
    assert.ok(document.security_events.some((event: { type: string }) => event.type === 'signed-in'));
    assert.deepEqual(document.second_factor, { state: 'off' });
    assert.deepEqual(document.passkeys, []);
    const [stored] = await app.service.sql`SELECT password_hash FROM accounts WHERE name = ${user.name}`;
    for (const secret of [stored!.password_hash as string, tokens.refresh_token, tokens.access_token, user.pwd]) {
      assert.ok(!response.text.includes(secret), 'no secret in the export');
    }
    assert.ok((await eventsOf(app, tokens.access_token)).some((event) => event.type === 'account-exported'));
    await app.smtp.waitFor((mail) => mail.to === user.email && mail.subject === 'A copy of your account\'s data was taken');
    const again = await app.call('POST', '/acc/me/export', { token: tokens.access_token, json: { pwd: user.pwd } });
    assert.equal(again.status, 429, 'once a minute, ten a day: the mail and the reads it costs stay bounded');
    assert.match(again.json.type as string, /too-soon$/);
  });

  it('needs the password, and the factor when one is on', async () => {
    const { user, token } = await registerAndSignIn(app);
    const wrong = await app.call('POST', '/acc/me/export', { token, json: { pwd: 'not-the-password' } });
    assert.equal(wrong.status, 403);
    assert.match(wrong.json.type as string, /wrong-password$/);
    const { recoveryCodes, secret, step } = await enableTotp(app, token, user);
    const missing = await app.call('POST', '/acc/me/export', { token, json: { pwd: user.pwd } });
    assert.equal(missing.status, 403);
    assert.match(missing.json.type as string, /otp-required$/);
    app.clock.advance(30);
    const otp = referenceTotp(secret, (Math.max(step + 1, totpStepOf(app))) * 30);
    const exported = await app.call('POST', '/acc/me/export', { token, json: { pwd: user.pwd, otp } });
    assert.equal(exported.status, 200, exported.text);
    assert.equal(exported.json.second_factor.state, 'on');
    assert.equal(exported.json.second_factor.recovery_codes_left, recoveryCodes.length);
    assert.ok(!exported.text.includes(secret), 'never the factor\'s key');
  });
});
