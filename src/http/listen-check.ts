import { createServer } from 'node:net';
import { ConfigError } from '../config/config.ts';

/**
 * Listens on HOST and PORT for a moment and lets go, so that a port in use or a host that is
 * not this machine's stops start-up with one line before the database is started or migrated.
 */
export function checkListenAddress(host: string, port: number, prefix: '' | 'ADMIN_' = ''): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, host, port, prefix)));
    probe.listen(port, host, () => probe.close(() => resolve()));
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
): Error {
  const [portName, hostName] = [`${prefix}PORT`, `${prefix}HOST`];
  switch (error.code) {
    case 'EADDRINUSE':
      return new ConfigError(
        `${portName} ${port} is already in use on ${host} (by another instance or program); ` +
          `set ${portName} to a free port, such as ${portName}=${port === 65535 ? port - 1 : port + 1}, ` +
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
