import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { enableTotp } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { registerAndSignIn, startTestService } from '../helpers/service.ts';

describe('FEATURES', () => {
  it('serves no route of a feature that is off, and leaves it out of the API document and the metadata', async (t) => {
    const env = {
      FEATURES: 'email-change', TOKEN_ISSUER: 'http://127.0.0.1', WEBAUTHN_RP_ID: 'localhost',
      WEBAUTHN_ORIGINS: 'http://localhost:5173',
    };
    const app = await startTestService({ env });
    t.after(() => app.stop());
    const { token } = await registerAndSignIn(app);
    for (const [method, path] of [['POST', '/acc/me/totp'], ['GET', '/acc/me/passkeys'], ['POST', '/auth/passkey/options']]) {
      const answer = await app.call(method!, path!, { token, json: { pwd: 'whatever-1' } });
      assert.equal(answer.status, 404, `${method} ${path}`);
      assert.equal(answer.json.type, 'urn:account-service:problem:not-found', `${method} ${path}: as an unknown path`);
    }
    const grant = { grant_type: 'urn:account-service:grant-type:passkey', challenge_id: 'x', credential: '{}' };
    assert.equal((await app.call('POST', '/auth/token', { json: grant })).json.error, 'unsupported_grant_type');
    const paths = Object.keys((await app.call('GET', '/openapi.json')).json.paths);
    assert.ok(paths.includes('/acc/me/email') && paths.includes('/acc/me'), 'the features that are on stay');
    assert.deepEqual(paths.filter((path) => path.includes('totp') || path.includes('passkey') || path.includes('webauthn')), []);
    const metadata = await app.call('GET', '/.well-known/oauth-authorization-server');
    assert.deepEqual(metadata.json.grant_types_supported, ['password', 'refresh_token']);
  });

  it('refuses to start with a feature off that accounts rely on, and says who and how to clear it', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.drop());
    const app = await startTestService({ databaseUrl: database.url });
    const { user, token } = await registerAndSignIn(app);
    await enableTotp(app, token, user);
    await app.stop();
    await assert.rejects(
      startTestService({ databaseUrl: database.url, env: { FEATURES: 'passkeys,email-change' } }),
      (error: Error) => {
        assert.equal(error.name, 'ConfigError');
        assert.match(error.message, new RegExp(`FEATURES leaves out second-factor, but 1 account\\(s\\) have an active second factor \\(${user.name}\\)`));
        assert.match(error.message, /admin remove-second-factor NAME --reason/);
        return true;
      },
    );
  });

  it('refuses a name that is no optional feature', async () => {
    await assert.rejects(startTestService({ env: { FEATURES: 'second-factor,sessions' } }), /FEATURES names "sessions", which is no optional feature/);
  });
});
