import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';

// CI judges a run by the exit code of .ci/run: a step that fails must end the script there.
it('.ci/run stops at the first failing step, from the repository root', async () => {
  const script = await readFile(new URL('../.ci/run', import.meta.url), 'utf8');
  const commands = script.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
  assert.equal(commands[0], 'set -euo pipefail', 'the first command');
  assert.equal(commands[1], 'cd "$(dirname "$0")/.."', 'the second command');
});

// A run that skips the suite passes: so the README's test command and the type check must not sit
// inside any `if` of the script (an unclosed one once held them, and a run printed no test at all).
it('.ci/run type-checks and runs the suite unconditionally, at the top level of the script', async () => {
  const script = await readFile(new URL('../.ci/run', import.meta.url), 'utf8');
  let depth = 0;
  const topLevel: string[] = [];
  for (const line of script.split('\n').map((text) => text.trim())) {
    if (line.startsWith('#') || line.startsWith('cat ') || line === '') continue;
    const oneLine = /^if\b.*;\s*fi\b/.test(line);
    if (/^if\b/.test(line) && !oneLine) depth += 1;
    if (depth === 0) topLevel.push(line);
    if (/^fi\b/.test(line)) depth -= 1;
    assert.ok(depth >= 0, `an unmatched fi: ${line}`);
  }
  assert.equal(depth, 0, 'every if is closed');
  assert.ok(topLevel.includes('PATH="$node24:$PATH" npm run typecheck'), 'the type check');
  assert.ok(topLevel.includes('PATH="$node24:$PATH" npm test'), "the README's test command");
});
