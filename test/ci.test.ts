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
