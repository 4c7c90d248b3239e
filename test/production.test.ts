// What the container image runs, checked without Docker: the compiled build with production
// dependencies only, in a directory of its own, against a real PostgreSQL and SMTP server.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, chown, cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { createTestDatabase } from './helpers/database.ts';
import { call } from './helpers/http.ts';
import { imageCommand, runMain, runMainAs, runNode } from './helpers/process.ts';
import { testEncryptionKeys, testSecret } from './helpers/service.ts';
import { codeIn, startTestSmtp, type TestSmtp } from './helpers/smtp.ts';

const root = new URL('..', import.meta.url).pathname;

describe('the production install (what the image runs)', () => {
  let dir: string;
  let smtp: TestSmtp;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'account-service-production-'));
    execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', join(dir, 'dist')], { cwd: root });
    for (const entry of ['package.json', 'package-lock.json', 'sql', 'api', 'templates', 'data']) await cp(join(root, entry), join(dir, entry), { recursive: true });
    execFileSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, stdio: 'ignore' });
    smtp = await startTestSmtp();
  });
  after(async () => {
    await smtp.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('holds only the two runtime dependencies', async () => {
    assert.deepEqual((await readdir(join(dir, 'node_modules'))).filter((name) => !name.startsWith('.')).sort(), ['nodemailer', 'postgres']);
  });

  it("serves a registration end to end with the image's CMD", async () => {
    const database = await createTestDatabase();
    try {
      const running = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SMTP_URL: smtp.url, PORT: '0', HOST: '0.0.0.0' }, [], imageCommand(), dir);
      const { url } = (await running.waitFor(/"msg":"listening"/)) as { url: string };
      const local = url.replace('0.0.0.0', '127.0.0.1');
      assert.equal((await call(local, 'GET', '/readyz')).status, 200);
      const email = `production-${process.pid}@example.com`;
      assert.equal((await call(local, 'POST', '/acc/reg/code', { json: { name: `production-${process.pid}`, email, pwd: 'quiet-harbor-1' } })).status, 204);
      const code = codeIn(await smtp.waitFor((message) => message.to === email));
      assert.equal((await call(local, 'POST', '/acc/reg', { json: { code } })).status, 204);
      running.kill('SIGTERM');
      assert.equal(await running.exit, 0);
    } finally {
      await database.drop();
    }
  });

  it("passes the image's HEALTHCHECK, as the Dockerfile writes it, on the address HOST names", async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    const [command, ...args] = JSON.parse(/^\s*CMD (\[.*\])$/m.exec(dockerfile.slice(dockerfile.indexOf('HEALTHCHECK')))![1]!) as string[];
    assert.equal(command, 'node');
    const database = await createTestDatabase();
    try {
      // 127.0.0.2: an address of this machine that is not 127.0.0.1, which the check once always asked.
      const env = { DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SMTP_URL: smtp.url, HOST: '127.0.0.2' };
      const running = runMain({ ...env, PORT: '0' }, [], imageCommand(), dir);
      const { url } = (await running.waitFor(/"msg":"listening"/)) as { url: string };
      const port = new URL(url).port;
      assert.equal((await runNode(args, dir, { HOST: '127.0.0.2', PORT: port })).code, 0, 'healthy');
      running.kill('SIGTERM');
      assert.equal(await running.exit, 0);
      assert.equal((await runNode(args, dir, { HOST: '127.0.0.2', PORT: port })).code, 1, 'unhealthy once stopped');
    } finally {
      await database.drop();
    }
  });

  it('keeps memory bounded and /healthz answered under a flood of registrations at production scrypt cost', async () => {
    const database = await createTestDatabase();
    try {
      // Production scrypt parameters (32 MiB a hash) and the default HASH_CONCURRENCY of 4.
      const running = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SMTP_URL: smtp.url, PORT: '0', RATE_LIMIT: '0' }, [], imageCommand(), dir);
      const { url } = (await running.waitFor(/"msg":"listening"/)) as { url: string };
      const flood = Array.from({ length: 300 }, (_, index) =>
        call(url, 'POST', '/acc/reg/code', { json: { name: `flood-${index}`, email: `flood-${index}@example.com`, pwd: 'quiet-harbor-1' } }).then((response) => response.status),
      );
      await delay(200);
      assert.equal((await call(url, 'GET', '/healthz')).status, 200, 'answered while the flood is in flight');
      const statuses = await Promise.all(flood);
      assert.deepEqual([...new Set(statuses)].sort(), [204, 503], `statuses: ${statuses}`);
      const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(await readFile(`/proc/${running.pid}/status`, 'utf8'))![1]);
      const boundMiB = 4 * 32 + 150;
      assert.ok(peakKiB / 1024 < boundMiB, `peak resident memory ${Math.round(peakKiB / 1024)} MiB, bound ${boundMiB} MiB`);
      running.kill('SIGTERM');
      assert.equal(await running.exit, 0);
    } finally {
      await database.drop();
    }
  });

  it('keeps signing in a known user during a registration flood at ten times the hashing capacity', async () => {
    const database = await createTestDatabase();
    try {
      // Production scrypt cost, two hashing slots: the bulk lane may hold one, sign-ins keep the other.
      const running = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, SMTP_URL: smtp.url, PORT: '0', RATE_LIMIT: '0', HASH_CONCURRENCY: '2' }, [], imageCommand(), dir);
      const { url } = (await running.waitFor(/"msg":"listening"/)) as { url: string };
      const owner = { name: `owner-${process.pid}`, email: `owner-${process.pid}@example.com`, pwd: 'owner-secret-1' };
      const started = performance.now();
      assert.equal((await call(url, 'POST', '/acc/reg/code', { json: owner })).status, 204);
      const hashMs = performance.now() - started;
      const code = codeIn(await smtp.waitFor((message) => message.to === owner.email));
      assert.equal((await call(url, 'POST', '/acc/reg', { json: { code } })).status, 204);

      // Offered open loop, like an attacker who does not wait for answers: ten times what two slots can hash.
      const perSecond = Math.ceil((10 * 2 * 1000) / hashMs);
      const flood: Array<Promise<number>> = [];
      const offering = setInterval(() => {
        const index = flood.length;
        flood.push(call(url, 'POST', '/acc/reg/code', { json: { name: `flood-${index}`, email: `flood-${index}@example.com`, pwd: 'quiet-harbor-1' } }).then((response) => response.status, () => 0));
      }, 1000 / perSecond);
      await delay(500);
      const signIns: number[] = [];
      for (let i = 0; i < 10; i += 1) {
        const response = await call(url, 'POST', '/auth/token', { json: { grant_type: 'password', username: owner.name, password: owner.pwd } });
        signIns.push(response.status);
      }
      clearInterval(offering);
      const statuses = await Promise.all(flood);
      assert.ok(signIns.filter((status) => status === 200).length >= 9, `sign-ins: ${signIns}`);
      assert.ok(statuses.filter((status) => status === 503).length > 0, `the flood was shed: ${flood.length} offered`);
      const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(await readFile(`/proc/${running.pid}/status`, 'utf8'))![1]);
      const boundMiB = 2 * 32 + 150;
      assert.ok(peakKiB / 1024 < boundMiB, `peak resident memory ${Math.round(peakKiB / 1024)} MiB, bound ${boundMiB} MiB`);
      running.kill('SIGTERM');
      assert.equal(await running.exit, 0);
    } finally {
      await database.drop();
    }
  });

  it('stops with a clear line, not a crash, when DATABASE_URL is missing (no embedded database in production)', async () => {
    const running = runMain({ PORT: '0' }, [], imageCommand(), dir);
    assert.equal(await running.exit, 2, 'a configuration error');
    assert.equal(running.stderr(), 'account-service: DATABASE_URL is not set, and the embedded PostgreSQL (a development dependency) is not installed\n');
  });

  it('prints its version from the package', async () => {
    const running = runMain({}, ['--version'], ['dist/main.js'], dir);
    assert.equal(await running.exit, 0);
    assert.deepEqual(running.lines, [JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')).version]);
  });

  // The image runs as the user `node` in /app, which belongs to root; the Dockerfile makes /app/.data
  // and gives it to that user. Here the same: the install belongs to root, the service runs as nobody (65534).
  const asRoot = process.getuid?.() === 0;
  const nobody = { uid: 65534, gid: 65534 };
  it('runs as a user who owns nothing but .data, without SMTP_URL, writing mail there; and without .data refuses clearly', { skip: asRoot ? false : 'needs root to run as another user' }, async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    assert.match(dockerfile, /RUN mkdir -p \/app\/\.data && chown node:node \/app\/\.data\nUSER node\n/, 'the Dockerfile prepares DATA_DIR for its user');
    await chmod(dir, 0o755);
    // Earlier tests ran as root here; the image has no .data until the Dockerfile makes it.
    await rm(join(dir, '.data'), { recursive: true, force: true });
    const database = await createTestDatabase();
    try {
      const env = { DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, PORT: '0' };
      const refused = runMainAs(nobody, env, imageCommand(), dir);
      assert.equal(await refused.exit, 2);
      assert.match(refused.stderr(), /^account-service: DATA_DIR .*\.data cannot be created or written \(permission denied\); set DATA_DIR/);

      await mkdir(join(dir, '.data'));
      await chown(join(dir, '.data'), nobody.uid, nobody.gid);
      const running = runMainAs(nobody, env, imageCommand(), dir);
      const { url } = (await running.waitFor(/"msg":"listening"/)) as { url: string };
      const email = `container-${process.pid}@example.com`;
      assert.equal((await call(url, 'POST', '/acc/reg/code', { json: { name: `container-${process.pid}`, email, pwd: 'quiet-harbor-1' } })).status, 204);
      const { path } = (await running.waitFor(/"msg":"mail written"/)) as { path: string };
      assert.ok(path.startsWith(join(dir, '.data', 'mail')), path);
      running.kill('SIGTERM');
      assert.equal(await running.exit, 0);
    } finally {
      await database.drop();
    }
  });
});
