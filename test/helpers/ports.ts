import { createServer } from 'node:net';

/** A port that nothing listens on now, as the system hands them out (for a URL that must name the port before the service listens). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}
