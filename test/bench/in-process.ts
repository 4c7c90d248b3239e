// The rejected-body path without the network: requests written into in-memory sockets of the
// service's own createServer, and of a bare node:http server answering the same bytes, in a
// child process each. What remains is the CPU that JavaScript and node:http spend on a request:
// the service's own share of it, free of the kernel's and of other processes' noise. The
// service is profiled (node:inspector), and its own functions that cost the most are listed.
//
// As a run: `in-process` in run.ts. As a child: node --import tsx in-process.ts <service|reference> <requests>.
import { execFile } from 'node:child_process';
import { Session } from 'node:inspector';
import { createServer as createBareServer, type Server } from 'node:http';
import { Duplex } from 'node:stream';
import { promisify } from 'node:util';
import type { Bench } from './bench.ts';
import { format, median } from './bench.ts';
import { compiledHttpServer } from './compiled-http.ts';

const body = JSON.stringify({ name: 'NOT VALID', email: 'nope', pwd: 1 });
const request = Buffer.from(`POST /acc/reg/code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
const connections = 50;

type ChildResult = { cpuUsPerRequest: number; wrong: number; hotspots: Array<{ fn: string; usPerRequest: number }> };

export async function inProcess(bench: Bench): Promise<void> {
  const requests = bench.quick ? 50_000 : 200_000;
  const run = async (who: 'service' | 'reference') => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, who, String(requests)], { maxBuffer: 1 << 22 });
    return JSON.parse(stdout) as ChildResult;
  };
  const service: ChildResult[] = [];
  const reference: ChildResult[] = [];
  for (let round = 0; round < 3; round += 1) {
    service.push(await run('service'));
    reference.push(await run('reference'));
  }
  const serviceUs = median(service.map((result) => result.cpuUsPerRequest));
  const referenceUs = median(reference.map((result) => result.cpuUsPerRequest));
  const wrong = [...service, ...reference].reduce((sum, result) => sum + result.wrong, 0);
  const hotspots = service[service.length - 1]!.hotspots;
  bench.print(`In process, no network: POST /acc/reg/code rejected body (400), ${requests} requests over ${connections} in-memory connections, median of 3 alternating rounds`, [
    `- CPU a request: service ${format(serviceUs)} µs, bare node:http answering the same bytes ${format(referenceUs)} µs: the service's own share is ${format(serviceUs - referenceUs)} µs, ratio ${format(referenceUs / serviceUs, 2)}.${wrong > 0 ? ` ${wrong} answers were not 400.` : ''}`,
    `- Where the service's own share goes (self time of its own functions, from a CPU profile of its last round): ${hotspots.map(({ fn, usPerRequest }) => `${fn} ${format(usPerRequest, 2)} µs`).join(', ')}.`,
  ]);
}

/** A socket in memory: what the server writes is looked at for the status line, and the next request follows. */
function drive(server: Server, total: number): Promise<{ wrong: number }> {
  let sent = 0;
  let answered = 0;
  let wrong = 0;
  return new Promise((resolve) => {
    const open = () => {
      const socket = new Duplex({
        read() {},
        write(chunk: Buffer | string, _encoding, callback) {
          answer(String(chunk));
          callback();
        },
        writev(chunks, callback) {
          for (const { chunk } of chunks) answer(String(chunk));
          callback();
        },
      });
      const answer = (text: string) => {
        if (!text.startsWith('HTTP/1.1 ')) return;
        if (!text.startsWith('HTTP/1.1 400 ')) wrong += 1;
        answered += 1;
        if (answered === total) resolve({ wrong });
        else if (sent < total) setImmediate(next);
      };
      const next = () => {
        sent += 1;
        socket.push(request);
      };
      Object.assign(socket, { remoteAddress: '127.0.0.1', setTimeout: () => socket, setNoDelay: () => socket, setKeepAlive: () => socket });
      server.emit('connection', socket);
      next();
    };
    for (let connection = 0; connection < connections; connection += 1) open();
  });
}

async function child(who: string, total: number): Promise<ChildResult> {
  const server = who === 'service' ? await serviceServer() : referenceServer(await capturedReply());
  // A first pass warms the JIT up; the second is measured; a third, of the service only, profiled.
  await drive(server, total / 4);
  const before = process.cpuUsage();
  const { wrong } = await drive(server, total);
  const cpu = process.cpuUsage(before);
  return { cpuUsPerRequest: (cpu.user + cpu.system) / total, wrong, hotspots: who === 'service' ? await profile(server, total / 4) : [] };
}

async function profile(server: Server, requests: number): Promise<ChildResult['hotspots']> {
  const session = new Session();
  session.connect();
  const post = (method: string) => new Promise<unknown>((resolve, reject) => session.post(method, (error, result) => (error ? reject(error) : resolve(result))));
  await post('Profiler.enable');
  await post('Profiler.start');
  await drive(server, requests);
  const { profile: taken } = (await post('Profiler.stop')) as { profile: Profile };
  session.disconnect();
  return summarise(taken, requests);
}

/** The service's HTTP layer and routes; its log lines are buffered as in production, then dropped instead of written. */
function serviceServer(): Promise<Server> {
  return compiledHttpServer(() => {});
}

/** The service's answer, as the bench's references send it. */
async function capturedReply(): Promise<{ status: number; headers: string[]; body: string }> {
  const service = await serviceServer();
  return new Promise((resolve) => {
    const socket = new Duplex({
      read() {},
      write(chunk: Buffer | string, _encoding, callback) {
        const text = String(chunk);
        const [head, answer] = text.split('\r\n\r\n') as [string, string];
        const [statusLine, ...lines] = head.split('\r\n');
        const added = new Set(['date', 'connection', 'keep-alive']);
        const headers = lines.map((line) => line.split(': ') as [string, string]).filter(([name]) => !added.has(name.toLowerCase())).flat();
        resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: answer });
        callback();
      },
    });
    Object.assign(socket, { remoteAddress: '127.0.0.1', setTimeout: () => socket, setNoDelay: () => socket, setKeepAlive: () => socket });
    service.emit('connection', socket);
    socket.push(request);
  });
}

/** What reference-server.ts does for this path: read, decode and parse the body, answer the bytes. */
function referenceServer(reply: { status: number; headers: string[]; body: string }): Server {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  return createBareServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      JSON.parse(utf8.decode(Buffer.concat(chunks)));
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body);
    });
  });
}

type Profile = { nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>; samples: number[]; timeDeltas: number[] };

/** Self time a request of the service's own functions (dist/, compiled from src/), the costliest first. */
function summarise(profile: Profile, requests: number): ChildResult['hotspots'] {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  profile.samples.forEach((id, index) => {
    const { functionName, url } = nodes.get(id)!.callFrame;
    const at = url.indexOf('/dist/');
    if (at === -1) return;
    const fn = `${functionName || '(anonymous)'} (${url.slice(at + 1)})`;
    self.set(fn, (self.get(fn) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([fn, us]) => ({ fn, usPerRequest: us / requests }));
}

if (process.argv[2] === 'service' || process.argv[2] === 'reference') {
  process.stdout.write(`${JSON.stringify(await child(process.argv[2], Number(process.argv[3])))}\n`);
  process.exit(0);
}
