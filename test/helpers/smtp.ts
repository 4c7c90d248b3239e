import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type ReceivedMail = { to: string; subject: string; text: string; html: string; messageId: string; raw: string };

/**
 * A real SMTP server in this process. `failFor(address, n, code)` makes the next n deliveries
 * to that address fail with that reply code, to exercise the outbox's retries.
 */
export type TestSmtp = {
  url: string;
  messages: ReceivedMail[];
  failFor(address: string, count: number, code: number): void;
  /** Holds the answer to the next message's data for `ms`, as a slow server would. */
  delayNext(ms: number): void;
  waitFor(predicate: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  stop(): Promise<void>;
};

export async function startTestSmtp(): Promise<TestSmtp> {
  const messages: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  const failures = new Map<string, { count: number; code: number }>();
  let nextDelayMs = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const failure = failures.get(address.address.toLowerCase());
      if (failure !== undefined && failure.count > 0) {
        failure.count -= 1;
        const error = Object.assign(new Error(`test failure ${failure.code}`), { responseCode: failure.code });
        callback(error);
        return;
      }
      callback();
    },
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', async () => {
        const heldMs = nextDelayMs;
        nextDelayMs = 0;
        if (heldMs > 0) await delay(heldMs);
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw).then((parsed: ParsedMail) => {
          const to = Array.isArray(parsed.to) ? (parsed.to[0]?.text ?? '') : (parsed.to?.text ?? '');
          messages.push({ to, subject: parsed.subject ?? '', text: parsed.text ?? '', html: String(parsed.html || ''), messageId: parsed.messageId ?? '', raw });
          for (const wake of waiters) wake();
          callback();
        }, callback);
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  let stopped: Promise<void> | null = null;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    delayNext(ms) {
      nextDelayMs = ms;
    },
    failFor(address, count, code) {
      failures.set(address.toLowerCase(), { count, code });
    },
    waitFor(predicate, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(predicate);
          if (found === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching mail within ${timeoutMs} ms; received: ${messages.map((mail) => `${mail.to} ${mail.subject}`).join('; ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    // Once: a test may stop it itself and again in its t.after.
    stop: () => (stopped ??= new Promise((resolve) => server.close(() => resolve()))),
  };
}

/** The registration code in a message, as the service wrote it. */
export function codeIn(mail: ReceivedMail): string {
  const match = /[A-Z]{4}-[A-Z]{4}-[A-Z]{4}-[A-Z]{4}/.exec(mail.text);
  if (match === null) throw new Error(`no code in: ${mail.text}`);
  return match[0];
}
