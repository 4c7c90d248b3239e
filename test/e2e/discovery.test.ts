import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as client from 'openid-client';
import type { HttpError } from '../../src/http/errors.ts';
import type { Deps, RequestContext } from '../../src/http/router.ts';
import { getAuthorizationServerMetadata } from '../../src/features/sessions/metadata-route.ts';
import { freePort } from '../helpers/ports.ts';
import { registerAndSignIn, startTestService, type TestService } from '../helpers/service.ts';

let app: TestService;
let issuer: string;
before(async () => {
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  app = await startTestService({ env: { PORT: String(port), TOKEN_ISSUER: issuer } });
});
after(async () => {
  await app.stop();
});

describe('GET /.well-known/oauth-authorization-server (RFC 8414)', () => {
  it('lets openid-client discover the service and sign in, refresh and revoke through what it found', async () => {
    const { user } = await registerAndSignIn(app);
    // Plain http is for this test only; openid-client asks for https unless told otherwise.
    const config = await client.discovery(new URL(issuer), 'any-client', undefined, client.None(), { algorithm: 'oauth2', execute: [client.allowInsecureRequests] });
    const metadata = config.serverMetadata();
    assert.equal(metadata.issuer, issuer);
    assert.equal(metadata.token_endpoint, `${issuer}/auth/token`);
    assert.equal(metadata.revocation_endpoint, `${issuer}/auth/revoke`);
    assert.deepEqual(metadata.grant_types_supported, ['password', 'refresh_token']);
    assert.deepEqual(metadata.token_endpoint_auth_methods_supported, ['none']);
    assert.deepEqual(metadata.revocation_endpoint_auth_methods_supported, ['none']);

    const signedIn = await client.genericGrantRequest(config, 'password', { username: user.name, password: user.pwd });
    assert.equal((await app.call('GET', '/acc/me', { token: signedIn.access_token })).status, 200);
    const refreshed = await client.refreshTokenGrant(config, signedIn.refresh_token!);
    await client.tokenRevocation(config, refreshed.refresh_token!);
    assert.equal((await app.call('GET', '/acc/me', { token: refreshed.access_token })).status, 401, 'the revoked session is gone');
  });

  it('answers the same metadata to HEAD without a body', async () => {
    const head = await app.call('HEAD', '/.well-known/oauth-authorization-server');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['content-type'], 'application/json');
  });
});

describe('GET /.well-known/oauth-authorization-server when TOKEN_ISSUER is not an origin URL', () => {
  it('answers 404 for the default issuer, naming TOKEN_ISSUER', async () => {
    const other = await startTestService();
    try {
      const response = await other.call('GET', '/.well-known/oauth-authorization-server');
      assert.equal(response.status, 404);
      assert.equal(response.json.type, 'urn:account-service:problem:not-found');
      assert.match(response.json.detail, /TOKEN_ISSUER/);
    } finally {
      await other.stop();
    }
  });

  const metadataFor = (tokenIssuer: string) => getAuthorizationServerMetadata({} as RequestContext, { config: { tokenIssuer }, signingKeys: null, grants: [] } as unknown as Deps);
  it('refuses an issuer with a path, a query, user info or another scheme, which RFC 8414 discovery cannot reach', async () => {
    for (const tokenIssuer of ['https://accounts.example.com/tenant', 'https://accounts.example.com/?x=1', 'https://accounts.example.com#x', 'ftp://accounts.example.com', 'https://user@accounts.example.com', 'HTTPS://Accounts.Example.com']) {
      await assert.rejects(metadataFor(tokenIssuer), (error: HttpError) => error.problem.status === 404, tokenIssuer);
    }
  });

  it('accepts the origin with a trailing slash, and publishes it as written', async () => {
    const reply = await metadataFor('https://accounts.example.com/');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, {
      issuer: 'https://accounts.example.com/',
      token_endpoint: 'https://accounts.example.com/auth/token',
      revocation_endpoint: 'https://accounts.example.com/auth/revoke',
      grant_types_supported: ['password', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      response_types_supported: [],
    });
  });
});
