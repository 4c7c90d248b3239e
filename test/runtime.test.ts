import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unsupportedNode } from '../src/support/runtime.ts';
import { execFileSync } from 'node:child_process';
import { runToEnd } from './helpers/process.ts';

const root = new URL('..', import.meta.url).pathname;
/** The machine's own Node, when it is an unsupported line (Node 20 on the CI machine); else null. */
function oldNode(): string | null {
  try {
    const version = execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).trim().slice(1);
    return unsupportedNode(version) === null ? null : '/usr/bin/node';
  } catch {
    return null;
  }
}

describe('the Node.js version', () => {
  it('accepts the LTS lines 22 and 24 and later, and refuses older ones in one line that names the supported ones', () => {
    for (const version of ['22.0.0', '22.21.1', '24.21.0', '25.1.0']) assert.equal(unsupportedNode(version), null, version);
    for (const version of ['20.20.2', '18.20.8']) {
      assert.equal(unsupportedNode(version), `Node.js ${version} is not supported; use Node.js 22 or 24 (the LTS lines; .nvmrc names 24)`);
    }
  });

  it('refuses to start on an unsupported Node, before reading anything else', { skip: oldNode() === null ? 'no unsupported Node on this machine' : false }, async () => {
    const node = oldNode()!;
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().slice(1);
    const result = await runToEnd(node, ['--import', 'tsx', 'src/main.ts'], root, { PORT: 'not a port' });
    assert.equal(result.code, 2);
    assert.equal(result.stderr, `account-service: Node.js ${version} is not supported; use Node.js 22 or 24 (the LTS lines; .nvmrc names 24)\n`);
  });
});
