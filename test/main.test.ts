import { freePort } from './helpers/ports.ts';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { settingNames } from '../src/config/config.ts';
import { loadMigrations } from '../src/storage/migrations.ts';
import { createTestDatabase } from './helpers/database.ts';
import { call } from './helpers/http.ts';
import { fromSource, runMain, runNode, runNpmStart, type Running } from './helpers/process.ts';
import { codeBlocks } from './helpers/markdown.ts';
import { codeIn, startTestSmtp, type TestSmtp } from './helpers/smtp.ts';
import { testEncryptionKeys, testSecret } from './helpers/service.ts';
import { waitUntil } from './helpers/wait.ts';

/** A fresh DATA_DIR that PostgreSQL, run as its own user when the tests run as root, can enter. */
async function makeDataDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};


const root = new URL('..', import.meta.url).pathname;

/** The one code block of a document that contains `marker`, as a reader would copy it. */
async function docsRecipe(document: string, marker: string): Promise<string> {
  const blocks = codeBlocks(await readFile(join(root, document), 'utf8')).filter((block) => block.code.includes(marker));
  assert.equal(blocks.length, 1, `one block in ${document} with ${marker}`);
  return blocks[0]!.code;
}

/** Sends `signal` to `pid`; false if no such process runs. */
function signalled(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

describe('main', () => {
  let smtp: TestSmtp;
  before(async () => {
    smtp = await startTestSmtp();
  });
  after(async () => {
    await smtp.stop();
  });

  it('stops with one clear line naming a bad variable', async () => {
    for (const [env, pattern] of [
      [{ PORT: 'x' }, /^account-service: PORT must be a whole number/],
      [{ DATABASE_URL: 'postgres://127.0.0.1:1/x' }, /^account-service: TOKEN_SECRET is required when DATABASE_URL is set/],
      [{ HOST: 'no such host' }, /^account-service: HOST must be an IP address .* or a host name, got "no such host"\n$/],
      [{ MAIL_FROM: 'Accounts' }, /^account-service: MAIL_FROM must be an address or Name <address>/],
    ] as const) {
      const running = runMain(env);
      assert.equal(await running.exit, 2);
      assert.match(running.stderr(), pattern);
      assert.equal(running.stderr().trim().split('\n').length, 1);
    }
  });

  it('refuses a DATA_DIR it cannot create with one line naming it, before anything starts', async () => {
    const dir = await makeDataDir('account-service-file-');
    try {
      await writeFile(join(dir, 'file'), 'in the way');
      const running = runMain({ DATA_DIR: join(dir, 'file', 'data'), PORT: '0' });
      assert.equal(await running.exit, 2);
      assert.equal(running.stderr(), `account-service: DATA_DIR ${join(dir, 'file', 'data')} cannot be created or written (a file is in the way); set DATA_DIR to a directory this user may write\n`);
      assert.deepEqual(running.lines.filter((line) => line.includes('postgres')), []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stops with one line naming PORT or HOST when it cannot listen, before the database starts', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as { port: number };
    const dataDir = await makeDataDir('account-service-port-');
    try {
      for (const [env, pattern] of [
        [{ PORT: String(port) }, new RegExp(`^account-service: PORT ${port} is already in use on 127\\.0\\.0\\.1 .*; set PORT to a free port, such as PORT=\\d+ \\(free now\\), or PORT=0 for any\\n$`)],
        [{ PORT: '0', HOST: '192.0.2.1' }, /^account-service: HOST 192\.0\.2\.1 is not an address of this machine; set HOST to/],
      ] as const) {
        const running = runMain({ DATA_DIR: dataDir, SCRYPT_PARAMS: 'ln=4,r=8,p=1', ...env });
        assert.equal(await running.exit, 2);
        assert.match(running.stderr(), pattern);
        assert.equal(running.stderr().trim().split('\n').length, 1);
        assert.equal(existsSync(join(dataDir, 'pg')), false, 'the embedded database was not even created');
        assert.equal(existsSync(join(dataDir, 'service.pid')), false, 'DATA_DIR is released');
      }
    } finally {
      busy.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('prints usage with --help and the version with --version, and refuses unknown arguments', async () => {
    const help = runMain({}, ['--help']);
    assert.equal(await help.exit, 0);
    assert.match(help.lines.join('\n'), /^Usage: account-service/);
    assert.match(help.lines.join('\n'), /--env-file/);
    const variables = new Set(settingNames);
    for (const name of variables) assert.match(help.lines.join(' '), new RegExp(`\\b${name}\\b`), `--help names ${name}`);
    const version = runMain({}, ['--version']);
    assert.equal(await version.exit, 0);
    assert.deepEqual(version.lines, [JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')).version]);
    const unknown = runMain({}, ['--frobnicate']);
    assert.equal(await unknown.exit, 2);
    assert.match(unknown.stderr(), /^account-service: unknown argument --frobnicate/);
  });

  it('reads its configuration from a file with node --env-file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'env-file-'));
    await writeFile(join(dir, 'service.env'), 'PORT=not-a-port\n');
    const running = runMain({}, [], ['--env-file', join(dir, 'service.env'), '--import', 'tsx', 'src/main.ts']);
    assert.equal(await running.exit, 2);
    assert.match(running.stderr(), /PORT must be a whole number/);
    await rm(dir, { recursive: true });
  });

  it('fails clearly when the database cannot be reached', async () => {
    const running = runMain({ DATABASE_URL: 'postgres://u:hunter2@127.0.0.1:1/x', TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, PORT: '0' });
    assert.equal(await running.exit, 1);
    assert.match(running.stderr(), /^account-service: .*ECONNREFUSED.*Check DATABASE_URL/);
    assert.equal(running.stderr().includes('hunter2'), false);
  });

  it('names DATABASE_URL when the database refuses the user or does not exist', async () => {
    const database = await createTestDatabase();
    const wrongDatabase = new URL(database.url);
    await database.drop();
    wrongDatabase.pathname = '/no_such_database_here';
    const running = runMain({ DATABASE_URL: wrongDatabase.href, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, PORT: '0' });
    assert.equal(await running.exit, 1);
    assert.match(running.stderr(), /^account-service: .*no_such_database_here.*Check DATABASE_URL/);
  });

  /** Starts `entry` on a fresh database with SMTP and a token secret, registers one account through it, and stops it with SIGTERM. */
  async function serveExternally(entry: string[], prefix: string): Promise<Running> {
    const database = await createTestDatabase();
    try {
      const running = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SMTP_URL: smtp.url, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1' }, [], entry);
      const { url } = (await running.waitFor(/"msg":"listening"/)) as { url: string };
      assert.equal((await call(url, 'GET', '/readyz')).status, 200);
      const email = `${prefix}-${process.pid}@example.com`;
      assert.equal((await call(url, 'POST', '/acc/reg/code', { json: { name: `${prefix}-${process.pid}`, email, pwd: 'quiet-harbor-1' } })).status, 204);
      const mail = await smtp.waitFor((message) => message.to === email);
      assert.equal((await call(url, 'POST', '/acc/reg', { json: { code: codeIn(mail) } })).status, 204);
      running.kill('SIGTERM');
      assert.equal(await running.exit, 0);
      return running;
    } finally {
      await database.drop();
    }
  }

  it('serves against an external database and SMTP server, then stops cleanly on SIGTERM', async () => {
    const running = await serveExternally(fromSource, 'main');
    assert.ok(running.lines.some((line) => line.includes('"msg":"stopped"')));
    assert.ok(running.lines.some((line) => line.includes('"msg":"SCRYPT_PARAMS ln=4,r=8,p=1 is weaker than the default')));
  });

  it('runs the migrations alone with --migrate', async () => {
    const database = await createTestDatabase();
    try {
      const running = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys }, ['--migrate']);
      assert.equal(await running.exit, 0);
      const names = (await loadMigrations()).map((migration) => migration.name);
      assert.ok(names.length >= 3);
      assert.ok(running.lines.some((line) => line.includes(`"msg":"migrations applied","applied":${JSON.stringify(names)}`)), running.lines.join('\n'));
    } finally {
      await database.drop();
    }
  });

  it('names the process that holds the embedded database when an earlier run was killed', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'account-service-held-'));
    await chmod(dataDir, 0o755);
    try {
      const env = { DATA_DIR: dataDir, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1' };
      const first = runMain(env);
      await first.waitFor(/"msg":"listening"/);
      first.kill('SIGKILL');
      await first.exit;
      const second = runMain(env);
      assert.equal(await second.exit, 1);
      const holder = (await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]!;
      assert.match(second.stderr(), new RegExp(`PostgreSQL process ${holder} holds it, left running by an earlier run that was killed: stop it with \`kill ${holder}\``));
      assert.doesNotMatch(second.stderr(), /another running instance/, 'the killed run holds DATA_DIR no more');
      process.kill(Number(holder), 'SIGINT');
    } finally {
      // The PostgreSQL that the killed run left (stopped above, or here if the test failed first)
      // removes its pid file as the last step of its shutdown: only then may its directory go.
      const pidFile = join(dataDir, 'pg', 'postmaster.pid');
      const left = Number((await readFile(pidFile, 'utf8').catch(() => '')).split('\n')[0]);
      const stopping = left > 0 && signalled(left, 'SIGINT');
      if (stopping) await waitUntil(async () => !existsSync(pidFile), 30_000);
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('tells a second start on the same DATA_DIR that another instance runs there, and how to run one more', async () => {
    const dataDir = await makeDataDir('account-service-twice-');
    try {
      const env = { DATA_DIR: dataDir, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1' };
      const first = runMain(env);
      const { url } = (await first.waitFor(/"msg":"listening"/)) as { url: string };
      const second = runMain(env);
      assert.equal(await second.exit, 1);
      assert.equal(
        second.stderr(),
        `account-service: another running instance (process ${first.pid}) uses DATA_DIR ${dataDir}. To run a second instance, give it a directory and a port of its own, e.g. DATA_DIR=.data-2 PORT=8081 npm start\n`,
      );
      assert.equal((await call(url, 'GET', '/readyz')).status, 200, 'the first instance and its database are untouched');
      first.kill('SIGTERM');
      assert.equal(await first.exit, 0);
      assert.equal(existsSync(join(dataDir, 'service.pid')), false, 'a clean stop releases DATA_DIR');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('runs the operator\'s commands beside a running npm start, on the database that instance started', async () => {
    const dataDir = await makeDataDir('account-service-beside-');
    try {
      const env = { DATA_DIR: dataDir, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1' };
      const service = runMain(env);
      const { url } = (await service.waitFor(/"msg":"listening"/)) as { url: string };
      assert.equal((await call(url, 'POST', '/acc/reg/code', { json: { name: 'beside', email: 'beside@example.com', pwd: 'quiet-harbor-1' } })).status, 204);
      const { path } = (await service.waitFor(/"msg":"mail written"/)) as { path: string };
      const code = codeIn({ text: (await readFile(path, 'utf8')).replace(/=\n/g, '') } as never);
      assert.equal((await call(url, 'POST', '/acc/reg', { json: { code } })).status, 204);
      const found = runMain(env, ['admin', 'find', 'beside', '--json']);
      assert.equal(await found.exit, 0, found.stderr());
      assert.equal(JSON.parse(found.lines.join('')).name, 'beside');
      const keys = runMain(env, ['signing-key', 'list']);
      assert.equal(await keys.exit, 0, keys.stderr());
      assert.equal((await call(url, 'GET', '/readyz')).status, 200, 'the running instance and its database are untouched');
      service.kill('SIGTERM');
      assert.equal(await service.exit, 0);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops the service and its embedded PostgreSQL within 10 s when only npm start gets ${signal}`, async () => {
      const dataDir = await makeDataDir('account-service-npm-');
      try {
        const npm = runNpmStart({ DATA_DIR: dataDir, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1' });
        const { url } = (await npm.waitFor(/"msg":"listening"/)) as { url: string };
        const postgres = Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
        assert.ok(isAlive(postgres));
        assert.equal((await call(url, 'GET', '/healthz')).status, 200);
        let npmExited = false;
        void npm.exit.then(() => (npmExited = true));
        process.kill(npm.pid, signal);
        const refused = () => call(url, 'GET', '/healthz').then(() => false, () => true);
        // Fails after 10 s: the port still answers, PostgreSQL still runs, or npm has not exited.
        await waitUntil(async () => npmExited && (await refused()) && !isAlive(postgres), 10_000);
        assert.ok(npm.lines.some((line) => line.includes('"msg":"stopped"')), 'the service shut down in its own order');
      } finally {
        // After a failure, stop what was left running, so that it outlives neither the test nor its directory.
        const service = Number(await readFile(join(dataDir, 'service.pid'), 'utf8').catch(() => ''));
        if (service > 0 && isAlive(service)) {
          process.kill(service, 'SIGTERM');
          await waitUntil(async () => !isAlive(service), 10_000).catch(() => {});
        }
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }

  it('starts on embedded defaults with nothing configured, and keeps data and keys across restarts; with ES256, its tokens pass the jose recipe of docs/design.md', async () => {
    // A directory as a clone is: .data beside node_modules, where the recipe looks for the secret.
    const clone = await mkdtemp(join(tmpdir(), 'account-service-main-'));
    const dataDir = join(clone, '.data');
    await mkdir(dataDir);
    await chmod(clone, 0o755);
    await chmod(dataDir, 0o755);
    try {
      const first = runMain({ DATA_DIR: dataDir, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1' });
      const { url } = (await first.waitFor(/"msg":"listening"/)) as { url: string };
      assert.match(first.lines.join('\n'), /"database":"embedded","mail":"files"/);
      assert.equal((await call(url, 'POST', '/acc/reg/code', { json: { name: 'embedded', email: 'embedded@example.com', pwd: 'quiet-harbor-1' } })).status, 204);
      const { path } = (await first.waitFor(/"msg":"mail written"/)) as { path: string };
      assert.ok(path.startsWith(join(dataDir, 'mail')));
      const code = codeIn({ text: (await readFile(path, 'utf8')).replace(/=\n/g, '') } as never);
      first.kill('SIGINT');
      assert.equal(await first.exit, 0);
      for (const file of ['token-secret', 'encryption-keys']) assert.equal(((await stat(join(dataDir, file))).mode & 0o777).toString(8), '600', file);

      // Again with ES256 and no TOKEN_ISSUER: embedded mode's issuer is its own origin, so discovery
      // answers as every documented client expects, and the recipe checks the tokens against it.
      const port = await freePort();
      const second = runMain({ DATA_DIR: dataDir, PORT: String(port), SCRYPT_PARAMS: 'ln=4,r=8,p=1', TOKEN_ALG: 'ES256' });
      const { url: again } = (await second.waitFor(/"msg":"listening"/)) as { url: string };
      const metadata = await call(again, 'GET', '/.well-known/oauth-authorization-server');
      assert.equal(metadata.status, 200, metadata.text);
      assert.equal(metadata.json.issuer, `http://127.0.0.1:${port}`);
      assert.equal((await call(again, 'POST', '/acc/reg', { json: { code } })).status, 204, 'the pending registration survived the restart');
      const token = await call(again, 'POST', '/auth/token', { json: { grant_type: 'password', username: 'embedded', password: 'quiet-harbor-1' } });
      assert.equal(token.status, 200);
      await writeFile(join(clone, 'verify-token.mjs'), await docsRecipe('docs/design.md', 'createRemoteJWKSet'));
      await symlink(join(root, 'node_modules'), join(clone, 'node_modules'));
      const verified = await runNode(['verify-token.mjs', token.json.access_token], clone, { TOKEN_ISSUER: `http://127.0.0.1:${port}` });
      assert.equal(verified.code, 0, verified.stderr);
      assert.match(verified.stdout, /^[0-9a-f-]{36} [0-9a-f-]{36}\n$/, 'the account id and the session id');
      second.kill('SIGTERM');
      assert.equal(await second.exit, 0);
      assert.equal(second.lines.join('\n').includes('quiet-harbor-1'), false);
    } finally {
      await rm(clone, { recursive: true, force: true });
    }
  });
});
