// docs/clients.md: each snippet, as written, against a real instance. The browser snippet names
// its URL and account in its first lines; only those are put in for the test's.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { codeBlocks } from './helpers/markdown.ts';
import { freePort } from './helpers/ports.ts';
import { runNode } from './helpers/process.ts';
import { registerAndSignIn, startTestService, uniqueUser, type TestService } from './helpers/service.ts';

const root = new URL('..', import.meta.url).pathname;
let app: TestService;
let base: string;
let dir: string;
before(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  app = await startTestService({ env: { PORT: String(port), TOKEN_ISSUER: base } });
  dir = await mkdtemp(join(tmpdir(), 'account-service-clients-'));
  await symlink(join(root, 'node_modules'), join(dir, 'node_modules'));
});
after(async () => {
  await app.stop();
  await rm(dir, { recursive: true, force: true });
});

const snippets = codeBlocks(await readFile(join(root, 'docs/clients.md'), 'utf8')).filter((block) => block.language === 'js');

describe('docs/clients.md', () => {
  it('has a snippet for openid-client, simple-oauth2, openapi-fetch and fetch', () => {
    assert.equal(snippets.length, 4);
  });

  for (const [index, { code }] of snippets.entries()) {
    it(`runs snippet ${index + 1} as written: signs in, reads the account, refreshes and signs out`, async () => {
      const user = uniqueUser('client');
      await registerAndSignIn(app, user);
      const browser = code.includes("const base = 'http://127.0.0.1:8080';");
      const source = browser ? code.replace("'http://127.0.0.1:8080'", JSON.stringify(base)).replace("username: 'alice', password: 'correct-horse'", `username: ${JSON.stringify(user.name)}, password: ${JSON.stringify(user.pwd)}`) : code;
      const file = join(dir, `snippet-${index + 1}.mjs`);
      await writeFile(file, source);
      const result = await runNode([file], dir, { BASE: base, USERNAME: user.name, PASSWORD: user.pwd });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `signed in as ${user.name}\nsigned out\n`);
      const sessions = await app.service.sql`SELECT count(*)::int AS n FROM sessions JOIN accounts ON accounts.id = account_id WHERE name = ${user.name}`;
      assert.equal(sessions[0]!.n, 1, 'only the session of registerAndSignIn is left: the snippet signed out');
    });
  }
});

describe('examples/account.html', () => {
  it('says every event type of the activity in words', async () => {
    const source = await readFile(new URL('../src/core/security-events.ts', import.meta.url), 'utf8');
    const union = /export type EventType =([\s\S]+?)\n\n/.exec(source)![1]!.replace(/\/\*\*.*\*\//g, '');
    const types = [...union.matchAll(/'([a-z-]+)'/g)].map((match) => match[1]!);
    const page = await readFile(new URL('../examples/account.html', import.meta.url), 'utf8');
    const words = /const eventWords = \{([^}]+)\};/.exec(page)![1]!;
    const named = [...words.matchAll(/'([a-z-]+)': '/g)].map((match) => match[1]!);
    assert.ok(types.length > 20, 'the union is read');
    assert.deepEqual([...named].sort(), [...types].sort());
  });
});
