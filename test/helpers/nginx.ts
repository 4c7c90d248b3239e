import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// tls-cert.pem and tls-key.pem: a self-signed certificate for 127.0.0.1, made once with openssl
// (req -x509, P-256, 100 years) for this test only. The key protects nothing.
const fixtures = new URL('../check/', import.meta.url).pathname;

export type Nginx = { url: string; ca: string; stop(): Promise<void> };

/** The nginx binary (Debian's package puts it in /usr/sbin, off a user's PATH), or null. */
export function findNginx(): string | null {
  for (const candidate of ['nginx', '/usr/sbin/nginx']) {
    if (spawnSync(candidate, ['-v'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return null;
}

/**
 * nginx as a TLS reverse proxy in front of `upstream`, as a deployment should run it: HSTS,
 * no version in `Server`, and X-Forwarded-For appended to. It connects to the service from
 * 127.0.0.2, so that the service tells the proxy (127.0.0.2) from the client (127.0.0.1).
 */
export async function startNginx(binary: string, upstream: string, port: number): Promise<Nginx> {
  const dir = await mkdtemp(join(tmpdir(), 'check-nginx-'));
  const config = `
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
error_log ${dir}/error.log warn;
pid ${dir}/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  server_tokens off;
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${fixtures}tls-cert.pem;
    ssl_certificate_key ${fixtures}tls-key.pem;
    add_header Strict-Transport-Security "max-age=31536000" always;
    location / {
      proxy_pass ${upstream};
      proxy_bind 127.0.0.2;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
  }
}
`;
  await writeFile(join(dir, 'nginx.conf'), config);
  const child = spawn(binary, ['-c', join(dir, 'nginx.conf'), '-p', dir, '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await waitForListening(dir, port, exited, () => stderr);
  return {
    url: `https://127.0.0.1:${port}`,
    ca: await readFile(join(fixtures, 'tls-cert.pem'), 'utf8'),
    async stop() {
      child.kill('SIGQUIT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Until nginx listens on `port`. The pid file is the barrier: nginx writes it only after it
 * opened its listening sockets. An open port alone could be another process's that took the
 * port after freePort() chose it (a suite running beside this one): then nginx exits with
 * "Address already in use", and this throws PortTakenError for the caller to choose again.
 */
async function waitForListening(dir: string, port: number, exited: Promise<void>, stderr: () => string): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const started = async () => (await readFile(join(dir, 'nginx.pid'), 'utf8').catch(() => '')).trim() !== '';
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (gone) {
      if (/in use/i.test(stderr())) throw new PortTakenError(`port ${port} was taken: ${stderr()}`);
      throw new Error(`nginx exited at start: ${stderr()}`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => (socket.end(), resolve(true)));
      socket.on('error', () => resolve(false));
    });
    if (open && await started() && !gone) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nginx did not listen on ${port}: ${stderr()}`);
}

/** nginx could not bind its port: something else took it meanwhile. */
export class PortTakenError extends Error {
  override name = 'PortTakenError';
}
