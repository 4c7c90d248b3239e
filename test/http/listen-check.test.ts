import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/config/config.ts';
import { checkListenAddress, listenError } from '../../src/http/listen-check.ts';

const failure = (code: string) => Object.assign(new Error(code), { code });

describe('checkListenAddress', () => {
  it('lets go of a free port at once, so that the service can take it', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    await checkListenAddress('127.0.0.1', port);
    await checkListenAddress('127.0.0.1', port);
  });

  it('names PORT when the port is taken, and suggests a port that is free, not merely the next one', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as { port: number };
    const next = createServer();
    const nextTaken = await new Promise<boolean>((resolve) => {
      next.once('error', () => resolve(false));
      next.listen(port + 1, '127.0.0.1', () => resolve(true));
    });
    try {
      const error = await checkListenAddress('127.0.0.1', port).then(() => null, (failure: Error) => failure);
      assert.ok(error instanceof ConfigError && error.message.startsWith(`PORT ${port} is already in use on 127.0.0.1`), String(error));
      const suggested = Number(/such as PORT=(\d+) \(free now\)/.exec(error.message)?.[1]);
      assert.ok(suggested > port && suggested !== port + 1 || !nextTaken, error.message);
      await checkListenAddress('127.0.0.1', suggested);
    } finally {
      busy.close();
      next.close();
    }
  });
});

describe('listenError', () => {
  it('turns each listen failure into one line naming the variable to change', () => {
    assert.match(listenError(failure('EADDRINUSE'), '::', 65535).message, /^PORT 65535 is already in use on ::.*set PORT to a free port, or PORT=0 for any$/);
    assert.match(listenError(failure('EACCES'), '0.0.0.0', 80).message, /^PORT 80 on 0\.0\.0\.0 needs privileges this user lacks; set PORT to 1024 or above$/);
    assert.match(listenError(failure('EADDRNOTAVAIL'), '192.0.2.1', 8080).message, /^HOST 192\.0\.2\.1 is not an address of this machine/);
    for (const code of ['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME']) {
      assert.match(listenError(failure(code), 'nowhere.invalid', 8080).message, /^HOST nowhere\.invalid cannot be resolved/);
    }
    const other = failure('EMFILE');
    assert.equal(listenError(other, '127.0.0.1', 8080), other, 'anything else stays as it was');
  });
});
