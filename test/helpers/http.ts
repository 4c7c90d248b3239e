import { request, type IncomingHttpHeaders } from 'node:http';

export type HttpResult = { status: number; headers: IncomingHttpHeaders; text: string; json: any };
/** `headers`: a list of values sends the header once for each. */
export type CallOptions = {
  json?: unknown;
  body?: string | Buffer;
  headers?: Record<string, string | string[]>;
  token?: string;
  /** The socket's source address: any of 127.0.0.0/8 reaches a service on 127.0.0.1; no proxy header sets it. */
  localAddress?: string;
};

/** Call options for a form-encoded body (the token endpoint's OAuth form). */
export function form(fields: Record<string, string>): CallOptions {
  return { body: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } };
}

/** One HTTP request over a real socket; `json` sends a JSON body with its content type. */
export function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<HttpResult> {
  const body = options.json !== undefined ? JSON.stringify(options.json) : options.body;
  const headers: Record<string, string | string[]> = {
    ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(options.token !== undefined ? { authorization: `Bearer ${options.token}` } : {}),
    ...options.headers,
  };
  if (body !== undefined && headers['content-length'] === undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const { localAddress } = options;
    const req = request(new URL(path, baseUrl), { method, headers, agent: false, localAddress }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown = null;
        try {
          json = text === '' ? null : JSON.parse(text);
        } catch {
          json = null;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** What a caller sees of an answer: everything but the headers that differ on every answer. */
export function seen(response: HttpResult): string {
  const headers = Object.entries(response.headers)
    .filter(([name]) => name !== 'date' && name !== 'x-request-id')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}: ${String(value)}`);
  return [response.status, ...headers, response.text].join('\n');
}
