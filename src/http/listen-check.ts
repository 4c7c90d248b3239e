import { createServer } from 'node:net';
import { ConfigError } from '../config.ts';

/**
 * Listens on HOST and PORT for a moment and lets go, so that a port in use or a host that is
 * not this machine's stops start-up with one line before the database is started or migrated.
 */
export function checkListenAddress(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, host, port)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** The one line that says which variable to change; any other error is returned as it is. */
export function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  switch (error.code) {
    case 'EADDRINUSE':
      return new ConfigError(
        `PORT ${port} is already in use on ${host} (by another instance or program); ` +
          `set PORT to a free port, such as PORT=${port === 65535 ? port - 1 : port + 1}, or PORT=0 for any`,
      );
    case 'EACCES':
      return new ConfigError(`PORT ${port} on ${host} needs privileges this user lacks; set PORT to 1024 or above`);
    case 'EADDRNOTAVAIL':
      return new ConfigError(
        `HOST ${host} is not an address of this machine; set HOST to one of its addresses, or 0.0.0.0 for all`,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new ConfigError(
        `HOST ${host} cannot be resolved to an address of this machine; set HOST to an IP address or a known host name`,
      );
    default:
      return error;
  }
}
