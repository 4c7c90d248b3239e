import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** One answer of the deployment, as a client outside sees it. */
export type Answer = {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: Record<string, unknown> | null;
  /** This end's address on the connection: what the first hop sees, unless a NAT is between. */
  localAddress: string;
  ms: number;
};

export type RequestOptions = { headers?: Record<string, string>; json?: unknown; form?: Record<string, string> };

export type Probe = {
  request(method: string, path: string, options?: RequestOptions): Promise<Answer>;
  /** Requests sent so far. */
  count(): number;
};

export type ProbeOptions = {
  /** Extra trusted CA certificates (PEM), for a deployment behind a private CA. */
  ca?: string;
  /** The least time between two requests: the check must not load a production service. */
  minIntervalMs?: number;
  timeoutMs?: number;
};

/** A paced HTTP client for the deployment at `base`; a fresh connection per request, so that nothing is pooled. */
export function createProbe(base: URL, options: ProbeOptions = {}): Probe {
  const minIntervalMs = options.minIntervalMs ?? 100;
  let next = 0;
  let sent = 0;
  const request = async (method: string, path: string, requestOptions: RequestOptions = {}): Promise<Answer> => {
    const wait = next - Date.now();
    next = Math.max(Date.now(), next) + minIntervalMs;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sent += 1;
    return send(new URL(path, base), method, requestOptions, options);
  };
  return { request, count: () => sent };
}

function send(url: URL, method: string, options: RequestOptions, probe: ProbeOptions): Promise<Answer> {
  const body =
    options.json !== undefined
      ? JSON.stringify(options.json)
      : options.form !== undefined
        ? new URLSearchParams(options.form).toString()
        : null;
  const type = options.json !== undefined ? 'application/json' : 'application/x-www-form-urlencoded';
  const headers = {
    ...(body === null ? {} : { 'Content-Type': type }),
    'User-Agent': 'account-service-check',
    ...options.headers,
  };
  const started = performance.now();
  const requestOf = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = requestOf(
      url,
      { method, headers, agent: false, ca: probe.ca, timeout: probe.timeoutMs ?? 10_000 },
      (res) => {
        const localAddress = res.socket.localAddress ?? '';
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const flat = Object.fromEntries(
            Object.entries(res.headers).map(([name, value]) => [name, [value].flat().join(', ')]),
          );
          resolve({
            status: res.statusCode ?? 0,
            headers: flat,
            text,
            json: parseObject(text),
            localAddress,
            ms: performance.now() - started,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer within the timeout`)));
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
