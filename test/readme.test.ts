import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { problems } from '../src/http/errors.ts';
import { routes } from '../src/routes/index.ts';

const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
const source = await readFile(new URL('../src/config.ts', import.meta.url), 'utf8');

describe('README', () => {
  it('lists every problem type with its status', () => {
    for (const problem of Object.values(problems)) {
      assert.match(readme, new RegExp(`\\| \`${problem.slug}\` \\| ${problem.status} \\|`), problem.slug);
    }
  });

  it('documents every route', () => {
    for (const route of routes) assert.ok(readme.includes(`\`${route.method} ${route.path}\``), `${route.method} ${route.path}`);
  });

  it('documents every environment variable the configuration reads', () => {
    const read = new Set([...source.matchAll(/env(?:\.|, ')([A-Z_]{3,})/g)].map((match) => match[1]!));
    assert.ok(read.size >= 10, `found ${[...read]}`);
    for (const name of read) assert.match(readme, new RegExp(`\\| \`${name}\` \\|`), name);
  });

  it('gives the two commands', () => {
    assert.ok(readme.includes('npm install && npm start'));
    assert.ok(readme.includes('npm test'));
  });
});
