// No line of src/ is over 120 characters (issue 31): a reviewer reads every line whole, in a
// side-by-side diff too, without scrolling. Counted in code points, as an editor shows them.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';

const src = new URL('../src/', import.meta.url).pathname;
const maxWidth = 120;

it(`src/ has no line over ${maxWidth} characters`, async () => {
  const files = (await readdir(src, { recursive: true })).filter((name) => name.endsWith('.ts')).sort();
  assert.ok(files.length > 50, `found ${files.length} files`);
  const long: string[] = [];
  for (const file of files) {
    const lines = (await readFile(join(src, file), 'utf8')).split('\n');
    lines.forEach((line, index) => {
      const width = [...line].length;
      if (width > maxWidth) long.push(`src/${file}:${index + 1} has ${width}`);
    });
  }
  assert.deepEqual(long, []);
});
