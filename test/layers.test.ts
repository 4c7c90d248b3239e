// The layers of src/, read from the import statements of its files:
// - routes/ and admin/ take only http/, use-cases/ and the leaf files (the files directly in src/);
// - http/ takes no domain folder (accounts/, sessions/, mail/, webhooks/, storage/, passkeys/);
// - leaf files take no folder, except the wiring files, which build the service from all of them;
// - check/, the operator's deployment check (issue 34), is a tool, not part of the service: it
//   talks to a deployment over HTTP only, so it takes nothing from the rest of src/, and only
//   main.ts takes it (to dispatch `check`). A reviewer of the service can then skip the folder;
// - and no file reaches itself through its imports.
// `import type` and `export type` are erased at run time and are allowed everywhere.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';

export type Import = { from: string; to: string; typeOnly: boolean };

const src = new URL('../src/', import.meta.url).pathname;
const domain = ['accounts', 'sessions', 'mail', 'webhooks', 'storage', 'passkeys'];
// The wiring: main.ts and service.ts start the service, and commands.ts runs main.ts's operator
// commands (reseal, signing-key) on the same parts; they are where every folder meets.
const wiring = ['main.ts', 'service.ts', 'commands.ts'];
// openapi.ts describes the HTTP API, and takes its problem types from http/errors.ts, so that the
// document names the very types the replies carry.
const leafExceptions: Record<string, string[]> = { 'openapi.ts': ['http'] };

const folderOf = (path: string): string | null => (path.includes('/') ? path.split('/')[0]! : null);

/** The relative imports and re-exports of a source file, as paths under src/. */
export function parseImports(file: string, source: string): Import[] {
  const pattern = /^\s*(?:import|export)\s+(type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?['"](\.[^'"]+)['"]/gm;
  return [...source.matchAll(pattern)].map((match) => ({
    from: file,
    to: normalize(join(dirname(file), match[2]!)),
    typeOnly: match[1] !== undefined,
  }));
}

/** Each import that breaks a layer rule, said in a line. */
export function layerViolations(imports: Import[]): string[] {
  const found: string[] = [];
  for (const { from, to, typeOnly } of imports) {
    if (typeOnly) continue;
    const source = folderOf(from);
    const target = folderOf(to);
    if ((source === 'check') !== (target === 'check') && !(from === 'main.ts' && target === 'check')) {
      found.push(`${from} imports ${to}: check/ is a tool apart; it and the service meet only in main.ts`);
    } else if (source === 'routes' && target !== null && !['routes', 'http', 'use-cases'].includes(target)) {
      found.push(`${from} imports ${to}: routes take only http/, use-cases/ and leaf files`);
    } else if (source === 'admin' && target !== null && !['admin', 'http', 'use-cases'].includes(target)) {
      found.push(`${from} imports ${to}: admin/ (the operator's command and API) takes only http/, use-cases/ and leaf files`);
    } else if (source === 'http' && target !== null && domain.includes(target)) {
      found.push(`${from} imports ${to}: http/ takes no domain folder`);
    } else if (source === null && target !== null && !wiring.includes(from)) {
      const allowed = leafExceptions[from] ?? [];
      if (!allowed.includes(target)) found.push(`${from} imports ${to}: leaf files take no folder`);
    }
  }
  return found;
}

/** Each circle of run-time imports, as the files it goes through. */
export function importCycles(imports: Import[]): string[][] {
  const edges = new Map<string, string[]>();
  for (const { from, to, typeOnly } of imports) {
    if (!typeOnly) edges.set(from, [...(edges.get(from) ?? []), to]);
  }
  const cycles: string[][] = [];
  const done = new Set<string>();
  const visit = (file: string, path: string[]): void => {
    const at = path.indexOf(file);
    if (at !== -1) return void cycles.push([...path.slice(at), file]);
    if (done.has(file)) return;
    for (const next of edges.get(file) ?? []) visit(next, [...path, file]);
    done.add(file);
  };
  for (const file of [...edges.keys()].sort()) visit(file, []);
  return cycles;
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(src, join(entry.parentPath, entry.name)))
    .sort();
}

async function srcImports(): Promise<Import[]> {
  const files = await sourceFiles(src);
  const sources = await Promise.all(files.map((file) => readFile(join(src, file), 'utf8')));
  return files.flatMap((file, index) => {
    const imports = parseImports(file, sources[index]!);
    // Every relative module name in the file was read as an import: none escapes the rules.
    const named = sources[index]!.match(/(?:from|import)\s+['"]\./g) ?? [];
    assert.equal(imports.length, named.length, `${file}: every relative import is parsed`);
    return imports;
  });
}

describe('layers of src/', () => {
  it('are read from every kind of import statement', () => {
    const source = [
      "import { a, type B } from '../storage/db.ts';",
      "import type { C } from '../accounts/accounts.ts';",
      "export { d } from './d.ts';",
      "import {\n  e,\n  f,\n} from '../mail/outbox.ts';",
      "import '../log.ts';",
      "import { readFile } from 'node:fs/promises';",
    ].join('\n');
    assert.deepEqual(parseImports('routes/x.ts', source), [
      { from: 'routes/x.ts', to: 'storage/db.ts', typeOnly: false },
      { from: 'routes/x.ts', to: 'accounts/accounts.ts', typeOnly: true },
      { from: 'routes/x.ts', to: 'routes/d.ts', typeOnly: false },
      { from: 'routes/x.ts', to: 'mail/outbox.ts', typeOnly: false },
      { from: 'routes/x.ts', to: 'log.ts', typeOnly: false },
    ]);
  });

  it('refuse a route that imports storage/, and allow it a type', () => {
    const route = (to: string, typeOnly = false): Import => ({ from: 'routes/x.ts', to, typeOnly });
    assert.equal(layerViolations([route('storage/db.ts')]).length, 1);
    assert.equal(layerViolations([route('accounts/accounts.ts')]).length, 1);
    assert.deepEqual(layerViolations([route('storage/db.ts', true), route('http/errors.ts'), route('log.ts')]), []);
    assert.deepEqual(layerViolations([route('use-cases/sign-in.ts'), route('routes/health.ts')]), []);
  });

  it('refuse a domain folder in http/, and any folder in a leaf file but the wiring', () => {
    const fromHttp: Import = { from: 'http/codes.ts', to: 'accounts/one-time-codes.ts', typeOnly: false };
    assert.equal(layerViolations([fromHttp]).length, 1);
    assert.equal(layerViolations([{ from: 'config.ts', to: 'webhooks/signing.ts', typeOnly: false }]).length, 1);
    assert.deepEqual(layerViolations([{ from: 'service.ts', to: 'storage/db.ts', typeOnly: false }]), []);
  });

  it('keep check/ apart from the service, but for main.ts dispatching it', () => {
    const edge = (from: string, to: string): Import => ({ from, to, typeOnly: false });
    assert.equal(layerViolations([edge('check/run.ts', 'http/errors.ts')]).length, 1);
    assert.equal(layerViolations([edge('check/run.ts', 'log.ts')]).length, 1);
    assert.equal(layerViolations([edge('commands.ts', 'check/cli.ts')]).length, 1);
    assert.deepEqual(layerViolations([edge('main.ts', 'check/cli.ts'), edge('check/run.ts', 'check/probe.ts')]), []);
  });

  it('find a circle, but not through a type import', () => {
    const edge = (from: string, to: string, typeOnly = false): Import => ({ from, to, typeOnly });
    assert.deepEqual(importCycles([edge('a.ts', 'b/c.ts'), edge('b/c.ts', 'a.ts')]), [['a.ts', 'b/c.ts', 'a.ts']]);
    assert.deepEqual(importCycles([edge('a.ts', 'b/c.ts'), edge('b/c.ts', 'a.ts', true)]), []);
  });

  it('hold in src/', async () => {
    const imports = await srcImports();
    assert.ok(imports.length > 100, `read ${imports.length} imports`);
    const problems = [
      ...layerViolations(imports),
      ...importCycles(imports).map((cycle) => `import circle: ${cycle.join(' -> ')}`),
    ];
    assert.deepEqual(problems, [], `the layers are broken ${problems.length} times:\n${problems.join('\n')}`);
  });
});

describe('constant-time comparison in src/', () => {
  it('is written once: timingSafeEqual appears in src/constant-time.ts alone, which the others call', async () => {
    const files = await sourceFiles(src);
    const sources = await Promise.all(files.map((file) => readFile(join(src, file), 'utf8')));
    const naming = files.filter((_, index) => sources[index]!.includes('timingSafeEqual'));
    assert.deepEqual(naming, ['constant-time.ts']);
  });
});
