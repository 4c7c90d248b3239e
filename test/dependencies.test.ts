import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';

const read = async (name: string) => JSON.parse(await readFile(new URL(`../${name}`, import.meta.url), 'utf8'));
const pkg = await read('package.json');
const lock = await read('package-lock.json');

describe('dependencies', () => {
  it('are postgres and nodemailer at run time, with nothing beneath them', () => {
    assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['nodemailer', 'postgres']);
    const production = Object.entries(lock.packages as Record<string, { dev?: boolean }>)
      .filter(([path, entry]) => path !== '' && entry.dev !== true)
      .map(([path]) => path)
      .sort();
    assert.deepEqual(production, ['node_modules/nodemailer', 'node_modules/postgres']);
  });

  it('match package-lock.json, which is up to date with package.json', () => {
    const root = lock.packages[''];
    assert.equal(lock.lockfileVersion, 3);
    assert.deepEqual(root.dependencies, pkg.dependencies);
    assert.deepEqual(root.devDependencies, pkg.devDependencies);
    for (const name of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]) {
      assert.ok(lock.packages[`node_modules/${name}`], `${name} is locked`);
    }
  });

  it('need Node.js 22 or later, the LTS lines still supported (22 and 24)', () => {
    assert.equal(pkg.engines.node, '>=22');
  });
});
