import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { addSigningKey, removeSigningKey } from '../../src/core/signing-keys.ts';
import { createSealer } from '../../src/core/sealing.ts';
import { parseConfig } from '../../src/config/config.ts';
import { signedIn } from '../helpers/accounts.ts';
import { freePort } from '../helpers/ports.ts';
import { runMain } from '../helpers/process.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { registerAndSignIn, startTestService, testEncryptionKeys, type TestService } from '../helpers/service.ts';

// TOKEN_ALG=ES256: resource servers verify with the published public keys, holding no secret.


let database: Awaited<ReturnType<typeof createTestDatabase>>;
let app: TestService;
let issuer: string;
before(async () => {
  database = await createTestDatabase();
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  app = await startTestService({ databaseUrl: database.url, env: { PORT: String(port), TOKEN_ISSUER: issuer, TOKEN_ALG: 'ES256', TOKEN_SECRET: '' } });
});
after(async () => {
  await app.stop();
  await database.drop();
});

const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { alg: string; kid: string };
const kids = async () => ((await app.call('GET', '/.well-known/jwks.json')).json.keys as { kid: string }[]).map((key) => key.kid);
const sealer = createSealer(parseConfig({ ENCRYPTION_KEYS: testEncryptionKeys }).encryptionKeys!);

describe('TOKEN_ALG=ES256', () => {
  it('publishes jwks_uri, and a token verifies with jose createRemoteJWKSet as docs/design.md writes it', async () => {
    const metadata = (await app.call('GET', '/.well-known/oauth-authorization-server')).json;
    assert.equal(metadata.jwks_uri, `${issuer}/.well-known/jwks.json`);
    const { token } = await registerAndSignIn(app);
    assert.equal(headerOf(token).alg, 'ES256');
    // The recipe of docs/design.md ("Verifying a token in another service"), unchanged.
    const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
    const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer, algorithms: ['ES256'] });
    assert.equal(protectedHeader.kid, headerOf(token).kid);
    assert.equal((await app.call('GET', '/acc/me', { token })).json.id, payload.sub);
    const set = (await app.call('GET', '/.well-known/jwks.json')).json;
    assert.deepEqual(Object.keys(set.keys[0]).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'], 'public members only');
  });

  it('lets openid-client discover the service and sign in, refresh and revoke', async () => {
    const { user } = await registerAndSignIn(app);
    const config = await client.discovery(new URL(issuer), 'any-client', undefined, client.None(), { algorithm: 'oauth2', execute: [client.allowInsecureRequests] });
    assert.equal(config.serverMetadata().jwks_uri, `${issuer}/.well-known/jwks.json`);
    const signedIn = await client.genericGrantRequest(config, 'password', { username: user.name, password: user.pwd });
    const refreshed = await client.refreshTokenGrant(config, signedIn.refresh_token!);
    assert.equal((await app.call('GET', '/acc/me', { token: refreshed.access_token })).status, 200);
    await client.tokenRevocation(config, refreshed.refresh_token!);
    assert.equal((await app.call('GET', '/acc/me', { token: refreshed.access_token })).status, 401);
  });

  it('keeps the private key only sealed, and shares the keys with every instance', async () => {
    const [row] = await app.service.sql<{ sealed: Buffer }[]>`SELECT sealed_private_key AS sealed FROM signing_keys`;
    assert.equal(row!.sealed[0], 2, 'a sealed value');
    // Registered at the first instance: either instance's resolver may mail a code, each to its own
    // SMTP server. Signing in needs no mail.
    const { user } = await registerAndSignIn(app);
    const second = await startTestService({ databaseUrl: database.url, env: { TOKEN_ALG: 'ES256', TOKEN_SECRET: '', TOKEN_ISSUER: issuer } });
    try {
      const { access_token: token } = await signedIn(second, user.name, user.pwd);
      assert.equal((await app.call('GET', '/acc/me', { token })).status, 200, 'a token of one instance verifies at the other');
      assert.equal(headerOf(token).kid, (await kids())[0]);
    } finally {
      await second.stop();
    }
  });

  it('takes no key that was planted in the table: a sealed key under another kid, or a kid that is not its key', async () => {
    const [real] = await app.service.sql<{ kid: string; sealed: Buffer }[]>`SELECT kid, sealed_private_key AS sealed FROM signing_keys`;
    const { token } = await registerAndSignIn(app);
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'der', type: 'pkcs8' });
    for (const [kid, sealed] of [
      ['planted', real!.sealed],
      ['mislabelled', sealer.seal(other, 'signing-key', 'mislabelled')],
    ] as const) {
      await app.service.sql`INSERT INTO signing_keys (kid, sealed_private_key, created_at) VALUES (${kid}, ${sealed}, now() - interval '1 hour')`;
      await app.service.sweep();
      const logged = app.logs.find((line) => line.includes(`"kid":"${kid}"`));
      assert.match(logged ?? '', kid === 'planted' ? /opens with no key/ : /is not the key its kid names/);
      assert.deepEqual(await kids(), [real!.kid], 'published neither');
      await app.service.sql`DELETE FROM signing_keys WHERE kid = ${kid}`;
      assert.deepEqual(await kids(), [real!.kid], 'the key set is unchanged');
      assert.equal((await app.call('GET', '/acc/me', { token })).status, 200);
    }
  });

  it('rotates: the new key is published first, then signs; the old one verifies until its tokens expire, then is gone', async () => {
    const { token: before } = await registerAndSignIn(app);
    const oldKid = headerOf(before).kid;
    const newKid = await addSigningKey(app.service.sql, sealer, app.clock.now());
    await app.service.sweep();
    assert.deepEqual(new Set(await kids()), new Set([oldKid, newKid]), 'published before it signs');
    assert.equal(headerOf((await registerAndSignIn(app)).token).kid, oldKid, 'the old key still signs during the lead');
    app.clock.advance(121);
    await app.service.sweep();
    const { token: after } = await registerAndSignIn(app);
    assert.equal(headerOf(after).kid, newKid, 'the new key signs after the lead');
    assert.equal((await app.call('GET', '/acc/me', { token: before })).status, 200, 'tokens of the old key still verify');
    app.clock.advance(900 + 10);
    await app.service.sweep();
    assert.deepEqual(await kids(), [newKid], 'the old key is retired once its tokens have expired');
    assert.equal((await app.service.sql`SELECT 1 FROM signing_keys WHERE kid = ${oldKid}`).length, 0, 'and deleted');
  });

  it('refuses, at the service and with jose, a token whose key was removed', async () => {
    const { token } = await registerAndSignIn(app);
    const oldKid = headerOf(token).kid;
    await addSigningKey(app.service.sql, sealer, app.clock.now());
    app.clock.advance(126);
    assert.deepEqual(await removeSigningKey(app.service.sql, oldKid, app.clock.now()), { outcome: 'removed' });
    await app.service.sweep();
    assert.equal((await app.call('GET', '/acc/me', { token })).status, 401, 'refused once the instance has read the table');
    const jwks = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
    await assert.rejects(jwtVerify(token, jwks, { issuer, algorithms: ['ES256'] }), { code: 'ERR_JWKS_NO_MATCHING_KEY' });
  });

  it('signing-key rotate: the JWKS lists the new key at once; removing the old key before the new one signs is refused', async () => {
    const ownDatabase = await createTestDatabase();
    const own = await startTestService({ databaseUrl: ownDatabase.url, env: { TOKEN_ALG: 'ES256', TOKEN_SECRET: '' } });
    const command = async (...args: string[]) => {
      const env = { DATABASE_URL: ownDatabase.url, TOKEN_ALG: 'ES256', TOKEN_SECRET: '', ENCRYPTION_KEYS: testEncryptionKeys };
      const running = runMain(env, ['signing-key', ...args]);
      return { code: await running.exit, lines: running.lines, stderr: running.stderr() };
    };
    try {
      const { token } = await registerAndSignIn(own);
      const oldKid = headerOf(token).kid;
      const rotated = await command('rotate');
      assert.equal(rotated.code, 0, rotated.stderr);
      const newKid = JSON.parse(rotated.lines.at(-1)!).kid as string;
      const published = ((await own.call('GET', '/.well-known/jwks.json')).json.keys as { kid: string }[]).map((key) => key.kid);
      assert.deepEqual(new Set(published), new Set([oldKid, newKid]), 'published at once, before any sweep');
      const removed = await command('remove', oldKid);
      assert.equal(removed.code, 1, 'the old key is the only one that may sign until the new one signs');
      assert.match(removed.stderr, /no key could sign/);
      assert.equal((await own.service.sql`SELECT 1 FROM signing_keys WHERE kid = ${oldKid}`).length, 1, 'kept');
      assert.equal(headerOf((await registerAndSignIn(own)).token).kid, oldKid, 'the old key still signs');
    } finally {
      await own.stop();
      await ownDatabase.drop();
    }
  });

  /**
   * On a service of its own: a token of the first key, a rotation past its lead, then `spoil` (what must not hold
   * the removal back), the first key deleted as `signing-key remove` does, and `sweep`; the token must then be refused.
   */
  async function removeAfter(spoil: (own: TestService) => Promise<void>, sweep: (own: TestService) => Promise<void>) {
    const own = await startTestService({ env: { TOKEN_ALG: 'ES256', TOKEN_SECRET: '' } });
    try {
      const { token } = await registerAndSignIn(own);
      const oldKid = headerOf(token).kid;
      await addSigningKey(own.service.sql, sealer, own.clock.now());
      own.clock.advance(130);
      await spoil(own);
      await own.service.sql`DELETE FROM signing_keys WHERE kid = ${oldKid}`;
      await sweep(own);
      assert.equal((await own.call('GET', '/acc/me', { token })).status, 401, 'the removed key verifies nothing');
      return own.logs;
    } finally {
      await own.stop();
    }
  }

  it('refuses a removed key at the next sweep even when another stored key fails to open', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'der', type: 'pkcs8' });
    const foreign = createSealer(parseConfig({ ENCRYPTION_KEYS: `lost:${Buffer.alloc(32, 9).toString('base64')}` }).encryptionKeys!);
    const logs = await removeAfter(async (own) => {
      await own.service.sql`INSERT INTO signing_keys (kid, sealed_private_key, created_at) VALUES ('unopenable', ${foreign.seal(other, 'signing-key', 'unopenable')}, now())`;
    }, (own) => own.service.sweep());
    assert.ok(logs.some((line) => line.includes('"kid":"unopenable"')), 'the key that fails to open is logged');
  });

  it('refuses a removed key at the next sweep even when an earlier step of the sweep fails', async () => {
    await removeAfter(async (own) => {
      await own.service.sql`
        CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`;
      await own.service.sql`
        CREATE TRIGGER refuse_delete BEFORE DELETE ON spent_passkey_challenges FOR EACH STATEMENT EXECUTE FUNCTION refuse_delete()`;
    }, (own) => assert.rejects(own.service.sweep(), /refused/));
  });

  it('refuses an HS256 token signed with the public key or any secret, whatever its header', async () => {
    const { token } = await registerAndSignIn(app);
    const [header, payload] = token.split('.');
    const forged = `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')}.${payload}.AAAA`;
    assert.equal((await app.call('GET', '/acc/me', { token: forged })).status, 401);
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    assert.equal((await app.call('GET', '/acc/me', { token: none })).status, 401);
    assert.equal((await app.call('GET', '/acc/me', { token: `${header}.${payload}.${'A'.repeat(86)}` })).status, 401);
  });
});

describe('TOKEN_ALG=HS256', () => {
  it('publishes no key set and no jwks_uri', async () => {
    const hs = await startTestService();
    try {
      const response = await hs.call('GET', '/.well-known/jwks.json');
      assert.equal(response.status, 404);
      assert.match(response.json.detail, /TOKEN_ALG/);
    } finally {
      await hs.stop();
    }
  });
});
