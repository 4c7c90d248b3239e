import { createServer } from 'node:net';
import { ConfigError } from '../config/config.ts';

/**
 * Listens on HOST and PORT for a moment and lets go, so that a port in use or a host that is
 * not this machine's stops start-up with one line before the database is started or migrated.
 */
export async function checkListenAddress(host: string, port: number, prefix: '' | 'ADMIN_' = ''): Promise<void> {
  const error = await tryListen(host, port);
  if (error === null) return;
  // A port in use: the hint names one that is free now, the next after it that is.
  let free: number | undefined;
  const last = error.code === 'EADDRINUSE' ? Math.min(port + 20, 65535) : port;
  for (let next = port + 1; free === undefined && next <= last; next += 1) {
    if ((await tryListen(host, next)) === null) free = next;
  }
  throw listenError(error, host, port, prefix, free);
}

function tryListen(host: string, port: number): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', resolve);
    probe.listen(port, host, () => probe.close(() => resolve(null)));
  });
}

/**
 * The one line that says which variable (PORT and HOST, or ADMIN_PORT and ADMIN_HOST) to change;
 * any other error is returned as it is.
 */
export function listenError(
  error: NodeJS.ErrnoException,
  host: string,
  port: number,
  prefix: '' | 'ADMIN_' = '',
  free?: number,
): Error {
  const [portName, hostName] = [`${prefix}PORT`, `${prefix}HOST`];
  switch (error.code) {
    case 'EADDRINUSE':
      return new ConfigError(
        `${portName} ${port} is already in use on ${host} (by another instance or program); ` +
          `set ${portName} to a free port, ${free === undefined ? '' : `such as ${portName}=${free} (free now), `}` +
          `or ${portName}=0 for any`,
      );
    case 'EACCES':
      return new ConfigError(
        `${portName} ${port} on ${host} needs privileges this user lacks; set ${portName} to 1024 or above`,
      );
    case 'EADDRNOTAVAIL':
      return new ConfigError(
        `${hostName} ${host} is not an address of this machine; ` +
          `set ${hostName} to one of its addresses, or 0.0.0.0 for all`,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new ConfigError(
        `${hostName} ${host} cannot be resolved to an address of this machine; ` +
          `set ${hostName} to an IP address or a known host name`,
      );
    default:
      return error;
  }
}
