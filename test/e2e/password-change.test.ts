import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { registerAndSignIn, signIn, startTestService, type TestService } from '../helpers/service.ts';

let app: TestService;
before(async () => {
  app = await startTestService();
});
after(async () => {
  await app.stop();
});

const change = (token: string | undefined, json: unknown) => app.call('PUT', '/acc/me/pwd', token === undefined ? { json } : { json, token });

describe('PUT /acc/me/pwd', () => {
  it('changes the password, revokes every earlier token and e-mails the owner', async () => {
    const { user, token } = await registerAndSignIn(app);
    const second = await signIn(app, user.email, user.pwd);
    const response = await change(token, { old_pwd: user.pwd, new_pwd: 'brand-new-pwd' });
    assert.equal(response.status, 204);
    assert.equal(response.text, '');

    for (const old of [token, second]) {
      const refused = await app.call('GET', '/acc/me', { token: old });
      assert.equal(refused.status, 401, 'tokens issued before the change are revoked');
      assert.equal(refused.headers['www-authenticate'], 'Bearer realm="accounts", error="invalid_token"');
    }
    const failed = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: user.pwd } });
    assert.equal(failed.status, 400, 'the old password no longer signs in');
    const fresh = await signIn(app, user.name, 'brand-new-pwd');
    assert.equal((await app.call('GET', '/acc/me', { token: fresh })).status, 200);

    const mail = await app.smtp.waitFor((message) => message.to === user.email && message.subject === 'Your password was changed');
    assert.match(mail.text, /changed at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z from the address 127\.0\.0\.1/);
    assert.equal(mail.text.includes('brand-new-pwd'), false);
  });

  it('answers 403 for a wrong old password and changes nothing', async () => {
    const { user, token } = await registerAndSignIn(app);
    const response = await change(token, { old_pwd: 'wrong-password', new_pwd: 'brand-new-pwd' });
    assert.equal(response.status, 403);
    assert.equal(response.json.type, 'urn:account-service:problem:wrong-password');
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 200, 'the token stays valid');
    await signIn(app, user.name, user.pwd);
  });

  it('answers 400 when the new password equals the old one', async () => {
    const { user, token } = await registerAndSignIn(app);
    const response = await change(token, { old_pwd: user.pwd, new_pwd: user.pwd });
    assert.equal(response.status, 400);
    assert.deepEqual(response.json['invalid-params'], [{ name: 'new_pwd', reason: 'must differ from old_pwd' }]);
  });

  it('checks both fields against the spec pattern and reports every failure', async () => {
    const { token } = await registerAndSignIn(app);
    const response = await change(token, { old_pwd: 'short', new_pwd: 'x'.repeat(33), extra: 1 });
    assert.equal(response.status, 400);
    assert.deepEqual(response.json['invalid-params'].map((param: { name: string }) => param.name), ['old_pwd', 'new_pwd', 'extra']);
    const missing = await change(token, {});
    assert.deepEqual(missing.json['invalid-params'], [
      { name: 'old_pwd', reason: 'is required' },
      { name: 'new_pwd', reason: 'is required' },
    ]);
    const typed = await change(token, { old_pwd: null, new_pwd: 123456 });
    assert.deepEqual(typed.json['invalid-params'], [
      { name: 'old_pwd', reason: 'must not be null' },
      { name: 'new_pwd', reason: 'must be a string' },
    ]);
  });

  it('answers 401 with WWW-Authenticate without a valid token, before reading the body', async () => {
    const missing = await change(undefined, { old_pwd: 'whatever1', new_pwd: 'whatever2' });
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Bearer realm="accounts"');
    const bad = await change('garbage', { old_pwd: 'whatever1', new_pwd: 'whatever2' });
    assert.equal(bad.status, 401);
    assert.equal(bad.headers['www-authenticate'], 'Bearer realm="accounts", error="invalid_token"');
  });

  it('lets only one of two concurrent changes with the same token win', async () => {
    const { user, token } = await registerAndSignIn(app);
    const results = await Promise.all([
      change(token, { old_pwd: user.pwd, new_pwd: 'first-new-pwd' }),
      change(token, { old_pwd: user.pwd, new_pwd: 'second-new-pwd' }),
    ]);
    const statuses = results.map((result) => result.status).sort();
    assert.deepEqual(statuses, [204, 401]);
    const winner = results[0]!.status === 204 ? 'first-new-pwd' : 'second-new-pwd';
    assert.equal((await app.call('POST', '/auth/token', { json: { grant_type: 'password', username: user.name, password: winner } })).status, 200, 'the winner set the password');
  });
});
