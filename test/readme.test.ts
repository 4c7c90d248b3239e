import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { parseConfig, settingNames } from '../src/config/config.ts';
import { createMailRenderer, loadMailTemplates } from '../src/mail/templates.ts';
import { createFileTransport } from '../src/mail/transport.ts';
import { createLogger } from '../src/telemetry/log.ts';
import { problems } from '../src/http/errors.ts';
import { routes } from '../src/routes.ts';
import { mailKinds, registrationCodeMail } from '../src/mail/messages.ts';
import { createTestDatabase } from './helpers/database.ts';
import { codeBlocks } from './helpers/markdown.ts';
import { runMain, runToEnd } from './helpers/process.ts';
import { testEncryptionKeys, testSecret } from './helpers/service.ts';
import { readApiDocument } from '../src/http/api-document.ts';

const apiDocument = readApiDocument('openapi.json');

const root = new URL('..', import.meta.url).pathname;
const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
// The reference the README points to: every route and error, every setting and mail.
const apiDoc = await readFile(new URL('../docs/api.md', import.meta.url), 'utf8');
const configurationDoc = await readFile(new URL('../docs/configuration.md', import.meta.url), 'utf8');

type Table = { line: number; header: string[]; delimited: boolean; rows: string[][] };

/** Splits a table line into its cells; `\|` is a pipe inside a cell. */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/**
 * The Markdown tables of a document, outside code blocks. A run of table lines must start with
 * a header and a delimiter row, and every row must have the header's number of cells: a table
 * cut by a blank line or a row with a cell too many or too few fails here.
 */
function parseTables(markdown: string): Table[] {
  const tables: Table[] = [];
  let inCode = false;
  let current: Table | null = null;
  markdown.split('\n').forEach((text, index) => {
    if (/^\s*```/.test(text)) inCode = !inCode;
    const isRow = !inCode && text.trimStart().startsWith('|');
    if (!isRow) {
      current = null;
      return;
    }
    if (current === null) {
      current = { line: index + 1, header: cells(text), delimited: false, rows: [] };
      tables.push(current);
      return;
    }
    const row = cells(text);
    assert.equal(row.length, current.header.length, `README line ${index + 1}: ${row.length} cells in a table of ${current.header.length} columns`);
    if (!current.delimited) {
      assert.ok(row.every((cell) => /^:?-{3,}:?$/.test(cell)), `README line ${index + 1}: the table starting at line ${current.line} has no delimiter row`);
      current.delimited = true;
      return;
    }
    current.rows.push(row);
  });
  for (const table of tables) assert.ok(table.delimited, `README line ${table.line}: a table row outside a table (cut off by a blank line?)`);
  return tables;
}

/** The table whose first header cell matches, with its rows keyed by the first cell. */
function tableStartingWith(header: RegExp, markdown = readme): Map<string, string[]> {
  const found = parseTables(markdown).filter((table) => header.test(table.header[0]!));
  assert.equal(found.length, 1, `one table headed ${header}`);
  const rows = new Map<string, string[]>();
  for (const row of found[0]!.rows) {
    assert.equal(rows.has(row[0]!), false, `${row[0]} appears twice`);
    rows.set(row[0]!, row);
  }
  return rows;
}

describe('the Markdown table parser of this test', () => {
  it('refuses a table cut by a blank line, a row of the wrong width, and a table without a delimiter', () => {
    assert.equal(parseTables('| a | b |\n|---|---|\n| 1 | 2 |\n')[0]!.rows.length, 1);
    assert.deepEqual(parseTables('| a | b |\n|---|---|\n| `x\\|y` | 2 |\n')[0]!.rows[0], ['`x\\|y`', '2']);
    assert.deepEqual(parseTables('```\n| not | a table |\n```\n'), []);
    assert.throws(() => parseTables('| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n'), /a table row outside a table|no delimiter row/);
    assert.throws(() => parseTables('| a | b |\n|---|---|\n| 1 | 2 | 3 |\n'), /3 cells in a table of 2 columns/);
    assert.throws(() => parseTables('| a | b |\n| 1 | 2 |\n'), /no delimiter row/);
  });
});

describe('README', () => {
  it('has only whole tables, and so has every document in docs/', async () => {
    let tables = parseTables(readme).length;
    for (const name of await readdir(resolve(root, 'docs'))) tables += parseTables(await readFile(resolve(root, 'docs', name), 'utf8')).length;
    assert.ok(tables >= 5, `found ${tables} tables`);
  });

  it('lists every problem type with its status in the problems table, and no other', () => {
    const rows = tableStartingWith(/^`type`/, apiDoc);
    for (const problem of Object.values(problems)) {
      const row = rows.get(`\`${problem.slug}\``);
      assert.ok(row, `${problem.slug} has a row`);
      assert.equal(row[1], String(problem.status), problem.slug);
    }
    assert.equal(rows.size, Object.keys(problems).length, `rows: ${[...rows.keys()]}`);
  });

  it('has a row for every route in the endpoints table, with every error status it answers, and no other', () => {
    const rows = tableStartingWith(/^Method and path$/, apiDoc);
    for (const route of routes) {
      const row = rows.get(`\`${route.method} ${route.path}\``);
      assert.ok(row, `${route.method} ${route.path} has a row`);
      const listed = new Set(row.at(-1)!.match(/\b[1-5][0-9]{2}\b/g) ?? []);
      const statuses = Object.keys(apiDocument.paths[route.path]![route.method.toLowerCase()]!.responses);
      const errors = statuses.filter((status) => status >= '400' && status !== '405');
      for (const status of errors) assert.ok(listed.has(status), `${route.method} ${route.path}: ${status} is listed`);
    }
    assert.equal(rows.size, routes.length, `rows: ${[...rows.keys()]}`);
  });

  it('has a row for every environment variable the configuration reads in the configuration table, and no other', () => {
    const read = new Set(settingNames);
    assert.ok(read.size >= 15, `found ${[...read]}`);
    const rows = tableStartingWith(/^Variable$/, configurationDoc);
    assert.deepEqual([...rows.keys()].sort(), [...read].map((name) => `\`${name}\``).sort());
    for (const [name, row] of rows) assert.ok(row.every((cell) => cell !== ''), `${name} has an empty cell`);
  });

  it("lists every kind of mail with its placeholders, the required in bold, in docs/configuration.md and docs/operations.md", async () => {
    for (const markdown of [configurationDoc, await readFile(resolve(root, 'docs', 'operations.md'), 'utf8')]) {
      const rows = tableStartingWith(/^Kind$/, markdown);
      assert.deepEqual([...rows.keys()], Object.keys(mailKinds).map((kind) => `\`${kind}\``));
      for (const [kind, spec] of Object.entries(mailKinds)) {
        const listed = spec.placeholders.map((name) => (spec.required.includes(name) ? `**\`${name}\`**` : `\`${name}\``)).join(', ');
        assert.equal(rows.get(`\`${kind}\``)![1], listed, kind);
      }
    }
    const described = [...tableStartingWith(/^Placeholder$/, configurationDoc).keys()].join(' ');
    for (const name of new Set(Object.values(mailKinds).flatMap((spec) => spec.placeholders))) assert.ok(described.includes(`\`${name}\``), `${name} is described`);
  });

  it('names every variable in service.env.example, which git does not ignore while service.env it ignores', async () => {
    const read = new Set(settingNames);
    const example = await readFile(resolve(root, 'service.env.example'), 'utf8');
    const named = new Set([...example.matchAll(/^(?:# )?([A-Z_]{3,})=/gm)].map((match) => match[1]!));
    assert.deepEqual([...named].sort(), [...read].sort());
    const ignored = (path: string) => spawnSync('git', ['check-ignore', '--no-index', '-q', path], { cwd: root }).status === 0;
    assert.equal(ignored('service.env'), true);
    assert.equal(ignored('service.env.example'), false);
  });

  it("accounts for every table of the schema in docs/operations.md's Retention, and names no other", async () => {
    const operations = await readFile(resolve(root, 'docs/operations.md'), 'utf8');
    const schema = await readFile(resolve(root, 'sql/schema.sql'), 'utf8');
    const tables = [...schema.matchAll(/^CREATE TABLE public\.(\w+) \(/gm)].map((match) => match[1]!).sort();
    // The section: its table, and the paragraph after it that names what needs no rule.
    const section = operations.slice(operations.indexOf('## Retention'), operations.indexOf('\n## ', operations.indexOf('## Retention') + 1));
    const ruled = parseTables(section).flatMap((table) => table.rows.flatMap((row) => [...row[0]!.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]!)));
    assert.deepEqual(tables.filter((table) => !section.includes(`\`${table}\``)), [], 'tables the Retention section does not name');
    assert.deepEqual([...new Set(ruled)].filter((table) => !tables.includes(table)), [], 'rows for tables the schema does not have');
  });

  it("names in docs/operations.md's Several instances every limit kept per instance and every gauge counted for all of them", async () => {
    const operations = await readFile(resolve(root, 'docs/operations.md'), 'utf8');
    const metricsRoute = await readFile(resolve(root, 'src/features/operators/metrics-route.ts'), 'utf8');
    const start = operations.indexOf('- **Several instances**');
    assert.ok(start >= 0, 'the bullet');
    const bullet = operations.slice(start, operations.indexOf('\n\n', start));
    // The configuration table says which settings are kept in memory.
    const perInstance = [...tableStartingWith(/^Variable$/, configurationDoc)].filter(([, row]) => row.some((cell) => cell.includes('Kept in memory, per instance'))).map(([name]) => name);
    // The gauges whose help says they count the rows of every instance, read from the database.
    const shared = [...metricsRoute.matchAll(/gauge\(\s*'(\w+)',\s*[^']*'[^']*\(all instances\)/g)]
      .map((match) => `\`${match[1]!}\``);
    assert.ok(perInstance.length >= 2 && shared.length >= 3, `found ${perInstance} and ${shared}`);
    assert.deepEqual([...perInstance, ...shared].filter((name) => !bullet.includes(name)), [], 'not named there');
  });

  it('points at nothing outside the repository, and at no file that is missing (README and docs/)', async () => {
    const documents = ['README.md', ...(await readdir(resolve(root, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
    assert.ok(documents.length >= 5, `found ${documents}`);
    let mentioned = 0;
    for (const document of documents) {
      const text = await readFile(resolve(root, document), 'utf8');
      const base = dirname(resolve(root, document));
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(target!)) continue;
        const path = resolve(base, target!.split('#')[0]!);
        assert.ok(!relative(root, path).startsWith('..'), `${document}: ${target} is outside the repository`);
        assert.ok(existsSync(path), `${document}: ${target} exists`);
      }
      for (const [, path] of text.matchAll(/`((?:src|test|sql|\.ci)\/[\w./-]+\.(?:ts|sql|json)|\.ci\/run|redocly\.yaml|Dockerfile|\.dockerignore)`/g)) {
        mentioned++;
        assert.ok(existsSync(resolve(root, path!)), `${path} is named in ${document} but missing`);
      }
    }
    assert.ok(mentioned >= 10, `found ${mentioned} paths`);
  });

  it('gives the two commands', () => {
    assert.ok(readme.includes('npm install && npm start'));
    assert.ok(readme.includes('npm test'));
  });
});

const walkThrough = 'A walk-through with curl';

describe('the walk-through', () => {
  it('runs as written against a real instance: every sh block in order, in one bash -e, answering each # HTTP/1.1 status shown, writing nothing into the working directory', async () => {
    const blocks = codeBlocks(readme).filter((block) => block.section === walkThrough && block.language === 'sh');
    assert.ok(blocks.length >= 4, `found ${blocks.length} blocks`);
    const script = blocks.map((block) => block.code).join('\n');
    const temp = await mkdtemp(join(tmpdir(), 'account-service-walk-through-'));
    const [dataDir, cwd, scratch] = ['data', 'cwd', 'tmp'].map((name) => join(temp, name)) as [string, string, string];
    for (const dir of [cwd, scratch]) await mkdir(dir);
    await chmod(temp, 0o755);
    const database = await createTestDatabase();
    // As npm start runs it, with mail as files in DATA_DIR/mail; only the database is the test's.
    const service = runMain({ DATABASE_URL: database.url, TOKEN_SECRET: testSecret, ENCRYPTION_KEYS: testEncryptionKeys, DATA_DIR: dataDir, PORT: '0', SCRYPT_PARAMS: 'ln=4,r=8,p=1' });
    try {
      const { url } = (await service.waitFor(/"msg":"listening"/)) as { url: string };
      const run = await runToEnd('bash', ['-e', '-c', script], cwd, { BASE: url, MAIL_DIR: join(dataDir, 'mail'), TMPDIR: scratch, HOME: temp });
      assert.equal(run.code, 0, `the walk-through stopped:\n${run.stderr}\n${run.stdout}`);
      const shown = [...script.matchAll(/^# HTTP\/1\.1 ([1-5][0-9]{2})/gm)].map((match) => match[1]);
      // Not anchored: a JSON answer ends without a newline, so the next status line follows it on its line.
      const answered = [...run.stdout.matchAll(/HTTP\/1\.1 ([1-5][0-9]{2}) /g)].map((match) => match[1]);
      assert.ok(shown.length >= 8, `found ${shown.length} statuses`);
      assert.deepEqual(answered, shown);
      assert.deepEqual(await readdir(cwd), [], 'tokens and files go to the scratch directory, not where the reader stands');
    } finally {
      service.kill('SIGTERM');
      await service.exit;
      await database.drop();
      await rm(temp, { recursive: true, force: true });
    }
  });

  it("finds the code with the walk-through's code_for in a mail written from the README's own template", async () => {
    const template = codeBlocks(configurationDoc).find((block) => block.language === 'text' && block.code.startsWith('Subject: Ihr Registrierungscode'));
    const helper = codeBlocks(readme).find((block) => block.language === 'sh' && block.code.includes('code_for() {'));
    assert.ok(template && helper, 'the README has the German template and the code_for helper');
    const work = await mkdtemp(join(tmpdir(), 'readme-code-for-'));
    try {
      await mkdir(join(work, 'templates'));
      await writeFile(join(work, 'templates', 'registration-code.de.txt'), template.code);
      const renderer = createMailRenderer(loadMailTemplates(join(work, 'templates')), parseConfig({}));
      const code = 'ABCD-EFGH-JKLM-NPQR';
      const expiresAt = new Date(Date.now() + 1800_000);
      const content = renderer.render(registrationCodeMail({ email: 'alice@example.com', name: 'alice', locale: 'de' }, code, expiresAt, new Date()));
      await writeFile(join(work, 'sent'), '');
      await new Promise((resolve) => setTimeout(resolve, 20));
      const transport = createFileTransport(join(work, 'mail'), createLogger('error', () => {}));
      await transport.send({ ...content, messageId: '<x@example.com>', from: 'a@example.com', to: 'alice@example.com' });
      transport.close();
      const functions = helper.code.slice(helper.code.indexOf('code_for() {'), helper.code.indexOf('\n}\n', helper.code.indexOf('code_for() {')) + 3);
      const found = spawnSync('bash', ['-c', `WORK=${work}; MAIL_DIR=${work}/mail; ${functions}\ncode_for alice@example.com`], { encoding: 'utf8' });
      assert.equal(found.stdout.trim(), code, found.stderr);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it('stops loudly at the first step whose answer is not what it expects', async () => {
    const blocks = codeBlocks(readme).filter((block) => block.section === walkThrough && block.language === 'sh');
    const temp = await mkdtemp(join(tmpdir(), 'account-service-walk-through-'));
    try {
      // Nothing listens on port 1: the first request fails, and bash stops there.
      const run = await runToEnd('bash', ['-e', '-c', blocks.map((block) => block.code).join('\n')], temp, { BASE: 'http://127.0.0.1:1', MAIL_DIR: join(temp, 'mail'), TMPDIR: temp });
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, /curl: \(7\)/);
      assert.equal(/^HTTP\/1\.1/m.test(run.stdout), false);
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  });
});

describe('what git ignores', () => {
  it('covers every data directory the README and docs/ tell people to create, with its secrets, database and mail', { skip: existsSync(join(root, '.git')) ? false : 'not a git checkout' }, async () => {
    let text = readme;
    for (const name of await readdir(resolve(root, 'docs'))) text += await readFile(resolve(root, 'docs', name), 'utf8');
    const dataDirs = new Set(['.data', ...[...text.matchAll(/DATA_DIR=(\.[\w.-]+)/g)].map((match) => match[1]!)]);
    assert.ok(dataDirs.has('.data-2'), `found ${[...dataDirs]}`);
    const created = [...dataDirs].flatMap((dir) => ['token-secret', 'pg-password', 'service.pid', 'pg/PG_VERSION', 'mail/1-a.eml'].map((file) => `${dir}/${file}`));
    const ignored = execFileSync('git', ['check-ignore', '--no-index', ...created], { cwd: root, encoding: 'utf8' }).trim().split('\n');
    assert.deepEqual(ignored, created);
  });
});

describe('the README for the first hour', () => {
  it('is at most 450 lines, and points to the reference it leaves to docs/', () => {
    assert.ok(readme.split('\n').length <= 450, `${readme.split('\n').length} lines`);
    assert.match(readme, /\[docs\/api\.md\]\(docs\/api\.md\)/);
    assert.match(readme, /\[docs\/configuration\.md\]\(docs\/configuration\.md\)/);
  });

  it("has every snippet of the README and docs/clients.md sign in with the account the walk-through creates", async () => {
    const clients = await readFile(resolve(root, 'docs', 'clients.md'), 'utf8');
    const passwords = [...`${readme}\n${clients}`.matchAll(/password[=:] ?'?"?([a-z-]+)/g)].map((match) => match[1]!);
    assert.ok(passwords.length >= 3, `found ${passwords}`);
    for (const password of passwords) assert.ok(['correct-horse', 'battery-staple', 'new-horse-battery'].includes(password) || password === 'process', password);
  });
});
