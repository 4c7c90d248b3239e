import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { proofs, type Act, type Proof } from '../../src/core/proofs.ts';
import { routes } from '../../src/routes.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';

/**
 * The proof table (src/core/proofs.ts) against the routes: every authenticated route names a
 * row, every row is named, and over HTTP a session alone does none of the acts whose row asks
 * for more.
 */
let app: TestService;
const returnUri = 'http://127.0.0.1:7/done';
const pkceValue = 'A'.repeat(43);
before(async () => {
  app = await startTestService({
    env: {
      WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGINS: 'http://localhost:5173', WEBAUTHN_RP_NAME: 'Example',
      // A provider that is never reached: every act below is refused before it would be.
      TOKEN_ISSUER: 'http://127.0.0.1:9', OIDC_PROVIDERS: 'corp', OIDC_REDIRECT_URIS: returnUri,
      OIDC_CORP_ISSUER: 'http://127.0.0.1:1', OIDC_CORP_CLIENT_ID: 'client', OIDC_CORP_CLIENT_SECRET: 'secret',
    },
  });
});
after(() => app.stop());

const wrong = 'not-the-password';
/** The first step of each act that needs the password: a body with a wrong one. */
const withWrongPassword: Record<string, object> = {
  'PUT /acc/me/pwd': { old_pwd: wrong, new_pwd: 'another-password-1' },
  'POST /acc/me/email': { pwd: wrong, email: 'somewhere-else@example.com' },
  'DELETE /acc/me': { pwd: wrong },
  'POST /acc/me/totp': { pwd: wrong },
  'DELETE /acc/me/totp': { pwd: wrong, otp: '123456' },
  'POST /acc/me/passkeys/options': { pwd: wrong },
  'DELETE /acc/me/passkeys/{id}': { pwd: wrong },
  'POST /acc/me/identities/options': { provider: 'corp', pwd: wrong, redirect_uri: returnUri, state: 's', code_challenge: pkceValue },
  'DELETE /acc/me/identities/{id}': { pwd: wrong },
  'PUT /acc/me/notices': { sign_in: 'off', pwd: wrong },
  'POST /acc/me/export': { pwd: wrong },
};
/** The second step of each act with a mailbox that takes no password: a body with a made-up code. */
const withMadeUpCode: Record<string, object> = {
  'POST /acc/me/totp/confirm': { code: '123456', email_code: 'ABCD-EFGH-IJKL-MNOP' },
  'POST /acc/me/passkeys': { challenge_id: 'made-up', credential: {}, email_code: 'ABCD-EFGH-IJKL-MNOP' },
  'POST /acc/me/identities': { code: pkceValue, code_verifier: pkceValue, redirect_uri: returnUri, email_code: 'ABCD-EFGH-IJKL-MNOP' },
};

describe('the proof table', () => {
  it('has a row for the act of every authenticated route, and every row is some route\'s act', () => {
    const named = new Set<string>();
    for (const route of routes) {
      if (route.act === undefined) continue;
      assert.ok(Object.hasOwn(proofs, route.act), `${route.method} ${route.path}: ${route.act} is a row`);
      named.add(route.act);
    }
    assert.deepEqual([...named].sort(), Object.keys(proofs).sort());
  });

  it('asks the mailbox for every act that a reset cannot undo', () => {
    const permanent: Act[] = ['enable-second-factor', 'add-passkey', 'change-address', 'delete-account', 'link-identity'];
    for (const [act, proof] of Object.entries(proofs) as [Act, Proof][]) {
      assert.equal(proof.mailbox !== undefined, permanent.includes(act), act);
      if (proof.mailbox !== undefined) assert.equal(proof.password, true, `${act}: the password first`);
    }
  });

  it('lets a session alone do no act whose row asks for the password or the mailbox', async () => {
    const { token } = await registerAndSignIn(app);
    for (const route of routes) {
      if (route.act === undefined) continue;
      const proof: Proof = proofs[route.act as Act];
      const name = `${route.method} ${route.path}`;
      const path = route.path.replace('{id}', randomUUID());
      if (proof.password !== true) {
        assert.ok(!(name in withWrongPassword) && !(name in withMadeUpCode), `${name} needs only a session`);
        continue;
      }
      if (name in withWrongPassword) {
        const answer = await app.call(route.method, path, { token, json: withWrongPassword[name] });
        assert.equal(answer.status, 403, `${name}: ${answer.text}`);
        assert.equal(answer.json.type, 'urn:account-service:problem:wrong-password', name);
      } else {
        assert.ok(name in withMadeUpCode, `${name}: the act needs the password, so the test must try it`);
        const answer = await app.call(route.method, path, { token, json: withMadeUpCode[name] });
        assert.ok(answer.status >= 400 && answer.status < 500, `${name}: ${answer.status} ${answer.text}`);
      }
      app.clock.advance(61);
    }
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 200, 'nothing happened to the account');
  });
});
