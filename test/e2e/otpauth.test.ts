// The otpauth URI as a real authenticator library reads it (otpauth, as many apps and sites
// use), for each kind of issuer: a URL (as RFC 8414 discovery needs), a name, and TOTP_ISSUER.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as OTPAuth from 'otpauth';
import { startTotp } from '../helpers/accounts.ts';
import { registerAndSignIn, startTestService } from '../helpers/service.ts';

describe('the otpauth URI, read by the otpauth library', () => {
  for (const [env, issuer] of [
    [{ TOKEN_ISSUER: 'http://127.0.0.1:8081' }, '127.0.0.1'],
    [{ TOKEN_ISSUER: 'https://accounts.example.com' }, 'accounts.example.com'],
    [{}, 'account-service'],
    [{ TOKEN_ISSUER: 'https://accounts.example.com', TOTP_ISSUER: 'Example Accounts' }, 'Example Accounts'],
  ] as const) {
    it(`names the issuer ${issuer} and the account, and its codes confirm the factor (${JSON.stringify(env)})`, async () => {
      const app = await startTestService({ env });
      try {
        const { user, token } = await registerAndSignIn(app);
        const enrolled = await startTotp(app, token, user);
        const totp = OTPAuth.URI.parse(enrolled.uri);
        assert.ok(totp instanceof OTPAuth.TOTP);
        assert.equal(totp.issuer, issuer);
        assert.equal(totp.label, user.name);
        assert.equal(totp.secret.base32, enrolled.secret);
        const code = totp.generate({ timestamp: app.clock.now().getTime() });
        const json = { code, email_code: enrolled.emailCode };
        assert.equal((await app.call('POST', '/acc/me/totp/confirm', { token, json })).status, 200);
      } finally {
        await app.stop();
      }
    });
  }
});
