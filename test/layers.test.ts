// The house of src/, read from the import statements of its files:
// - core/ decides who gets in and what stays secret; it takes the infrastructure, never a feature;
// - features/<name>/ each hold one feature; a feature takes the core and the infrastructure, never
//   another feature;
// - the infrastructure (http/, storage/, mail/, webhooks/, config/, telemetry/, support/) decides
//   nothing: it takes neither the core nor a feature;
// - the files directly in src/ wire it all together and may take anything;
// - check/, the operator's deployment check, is a program apart: it takes nothing from the rest of
//   src/, and only main.ts takes it (to dispatch `check`);
// - and no file reaches itself through its imports.
// `import type` and `export type` are erased at run time and are allowed everywhere.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';

export type Import = { from: string; to: string; typeOnly: boolean };

const src = new URL('../src/', import.meta.url).pathname;
/** The relative imports and re-exports of a source file, as paths under src/. */
export function parseImports(file: string, source: string): Import[] {
  const pattern = /^\s*(?:import|export)\s+(type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?['"](\.[^'"]+)['"]/gm;
  return [...source.matchAll(pattern)].map((match) => ({
    from: file,
    to: normalize(join(dirname(file), match[2]!)),
    typeOnly: match[1] !== undefined,
  }));
}

export const infrastructure = ['http', 'storage', 'mail', 'webhooks', 'config', 'telemetry', 'support'];

/** The room of a file: 'core', 'feature:<name>', 'infrastructure', 'check' or 'wiring'. */
export function roomOf(path: string): string {
  const [first, second] = path.split('/');
  if (second === undefined) return 'wiring';
  if (first === 'core' || first === 'check') return first;
  if (first === 'features') return `feature:${second}`;
  if (infrastructure.includes(first!)) return 'infrastructure';
  return `unknown:${first}`;
}

/** Each import that breaks a rule of the house, said in a line. */
export function layerViolations(imports: Import[]): string[] {
  const found: string[] = [];
  for (const { from, to, typeOnly } of imports) {
    if (typeOnly) continue;
    const source = roomOf(from);
    const target = roomOf(to);
    if (source.startsWith('unknown') || target.startsWith('unknown')) {
      found.push(`${from} imports ${to}: a folder outside the house (core/, features/, the infrastructure, check/)`);
    } else if ((source === 'check') !== (target === 'check') && !(from === 'main.ts' && target === 'check')) {
      found.push(`${from} imports ${to}: check/ is a program apart; it and the service meet only in main.ts`);
    } else if (source === 'infrastructure' && target !== 'infrastructure') {
      found.push(`${from} imports ${to}: the infrastructure takes neither the core nor a feature`);
    } else if (source === 'core' && target !== 'core' && target !== 'infrastructure') {
      found.push(`${from} imports ${to}: the core takes no feature`);
    } else if (source.startsWith('feature:') && target.startsWith('feature:') && source !== target) {
      found.push(`${from} imports ${to}: a feature takes no other feature`);
    } else if (source !== 'wiring' && target === 'wiring') {
      found.push(`${from} imports ${to}: only the wiring takes the wiring`);
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
      "import type { C } from '../core/accounts.ts';",
      "export { d } from './d.ts';",
      "import {\n  e,\n  f,\n} from '../mail/outbox.ts';",
      "import '../log.ts';",
      "import { readFile } from 'node:fs/promises';",
    ].join('\n');
    assert.deepEqual(parseImports('routes/x.ts', source), [
      { from: 'routes/x.ts', to: 'storage/db.ts', typeOnly: false },
      { from: 'routes/x.ts', to: 'core/accounts.ts', typeOnly: true },
      { from: 'routes/x.ts', to: 'routes/d.ts', typeOnly: false },
      { from: 'routes/x.ts', to: 'mail/outbox.ts', typeOnly: false },
      { from: 'routes/x.ts', to: 'log.ts', typeOnly: false },
    ]);
  });

  it('refuse a feature that imports another, and allow it the core, the infrastructure and a type', () => {
    const edge = (to: string, typeOnly = false): Import => ({ from: 'features/sessions/x.ts', to, typeOnly });
    assert.equal(layerViolations([edge('features/passkeys/store.ts')]).length, 1);
    assert.deepEqual(layerViolations([edge('features/passkeys/store.ts', true)]), []);
    assert.deepEqual(layerViolations([edge('core/accounts.ts'), edge('storage/db.ts'), edge('features/sessions/y.ts')]), []);
  });

  it('refuse the core that imports a feature, and the infrastructure that imports the core or a feature', () => {
    const edge = (from: string, to: string): Import => ({ from, to, typeOnly: false });
    assert.equal(layerViolations([edge('core/auth.ts', 'features/account/delete.ts')]).length, 1);
    assert.equal(layerViolations([edge('http/server.ts', 'core/auth.ts')]).length, 1);
    assert.equal(layerViolations([edge('mail/outbox.ts', 'features/passkeys/store.ts')]).length, 1);
    assert.equal(layerViolations([edge('core/auth.ts', 'service.ts')]).length, 1);
    assert.deepEqual(layerViolations([edge('core/auth.ts', 'http/errors.ts'), edge('service.ts', 'features/passkeys/store.ts')]), []);
  });

  it('keep check/ apart from the service, but for main.ts dispatching it', () => {
    const edge = (from: string, to: string): Import => ({ from, to, typeOnly: false });
    assert.equal(layerViolations([edge('check/run.ts', 'http/errors.ts')]).length, 1);
    assert.equal(layerViolations([edge('check/run.ts', 'telemetry/log.ts')]).length, 1);
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
    assert.deepEqual(problems, [], `the house is broken ${problems.length} times:\n${problems.join('\n')}`);
  });
});

describe('constant-time comparison in src/', () => {
  it('is written once: timingSafeEqual appears in src/core/constant-time.ts alone, which the others call', async () => {
    const files = await sourceFiles(src);
    const sources = await Promise.all(files.map((file) => readFile(join(src, file), 'utf8')));
    const naming = files.filter((_, index) => sources[index]!.includes('timingSafeEqual'));
    assert.deepEqual(naming, ['core/constant-time.ts']);
  });
});
