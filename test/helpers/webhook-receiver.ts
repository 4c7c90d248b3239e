import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';

/** One request as the receiver got it, checked with the Standard Webhooks library. */
export type Received = {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The library accepted the signature under the receiver's secret. */
  verified: boolean;
  /** The status the receiver answered; null while it holds the request unanswered. */
  answered: number | null;
};

/** `ok` answers 204, `fail` 503 with a body, `hang` never answers. */
export type ReceiverMode = 'ok' | 'fail' | 'hang';

export type Receiver = {
  url: string;
  received: Received[];
  mode: ReceiverMode;
  /** Closes the port, so that connections are refused, until `up()`. */
  down(): Promise<void>;
  up(): Promise<void>;
  waitFor(check: (received: Received[]) => boolean, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
};

/** What a receiver answers with `fail`; it must never reach the service's log. */
export const failureAnswer = 'receiver-answer-body-that-must-not-be-logged';

/** A real HTTP receiver on a fixed port, as an application would run one. */
export async function startReceiver(secret: string): Promise<Receiver> {
  const verifier = new Webhook(secret);
  const sockets = new Set<Socket>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
      let verified = true;
      try {
        verifier.verify(body, headers);
      } catch {
        verified = false;
      }
      const entry: Received = { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, verified, answered: null };
      receiver.received.push(entry);
      if (receiver.mode === 'hang') return;
      entry.answered = receiver.mode === 'ok' && verified ? 204 : 503;
      res.writeHead(entry.answered, { 'content-type': 'text/plain' }).end(entry.answered === 204 ? undefined : failureAnswer);
    });
  };
  let server = createServer(handle);
  const listen = (port: number) =>
    new Promise<void>((resolve) => {
      server.on('connection', (socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      server.listen(port, '127.0.0.1', () => resolve());
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/hooks`,
    received: [],
    mode: 'ok',
    down: close,
    async up() {
      server = createServer(handle);
      await listen(port);
    },
    async waitFor(check, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!check(receiver.received)) {
        if (Date.now() > deadline) throw new Error(`receiver: condition not reached; got ${JSON.stringify(receiver.received.map((entry) => [entry.id, entry.answered, entry.body]))}`);
        await delay(25);
      }
    },
    stop: close,
  };
  return receiver;
}

/** The body of each accepted (2xx) delivery, parsed, in arrival order. */
export function acceptedEvents(received: Received[]): Array<{ id: string; type: string; timestamp: string; data: Record<string, unknown> }> {
  return received.filter((entry) => entry.answered === 204).map((entry) => ({ id: entry.id, ...(JSON.parse(entry.body) as { type: string; timestamp: string; data: Record<string, unknown> }) }));
}
