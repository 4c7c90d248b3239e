// Loaded into every test file's process (test/run.ts). A file whose tests are all done but
// whose process something still holds open (a driver connection that reconnected after its
// pool ended, a timer) would otherwise wait for the run's 25-minute watchdog, and CI fail on
// tests that passed. A minute after the file's last test (time for the file's own after hooks,
// which run after this one), the process ends with the verdict its tests gave it, and says on
// stderr what held it. The service's own shutdown does not rely on this: main.ts exits once
// stop() is done.
import { after } from 'node:test';

const graceMs = 60_000;

after(() => {
  setTimeout(() => {
    type Handle = { constructor?: { name?: string }; remoteAddress?: string; remotePort?: number };
    const handles = (process as unknown as { _getActiveHandles(): Handle[] })._getActiveHandles();
    const held = handles.map((handle) => {
      const name = handle.constructor?.name ?? 'handle';
      return handle.remotePort === undefined ? name : `${name} to ${handle.remoteAddress}:${handle.remotePort}`;
    });
    const file = process.argv[1];
    process.stderr.write(`${file}: held open a minute after its last test by ${held.join(', ')}; ending it\n`);
    process.exit();
  }, graceMs).unref();
});
