import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Logger } from '../telemetry/log.ts';
import type { MailContent } from './messages.ts';

export type Envelope = MailContent & { messageId: string; from: string; to: string };
export type MailTransport = {
  send(mail: Envelope): Promise<void>;
  close(): void;
  /** SMTP only: whether the server answered the last connection (a send, or `verify`); null before any. */
  reachable?(): boolean | null;
  /** SMTP only: connects and greets the server; rejects with why it could not. */
  verify?(): Promise<void>;
};

/** RFC 3834: every message is machine-made, so that vacation responders and the like do not answer it. */
const automaticHeaders = { 'Auto-Submitted': 'auto-generated' };

/** Short timeouts: a slow server is retried anyway, and a send must end well within the outbox's lease (outbox.ts). */
export const smtpTimeouts = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/** Delivers through an SMTP server given as `smtp://user:pass@host:port` or `smtps://…`. */
export function createSmtpTransport(url: string, timeouts: typeof smtpTimeouts = smtpTimeouts): MailTransport {
  const transporter = lazily(async () => (await loadNodemailer()).createTransport({ url, ...timeouts }));
  let reached: boolean | null = null;
  // A reply of the server, even a refusal, shows it reached; only a connection's failure does not.
  const noting = async (work: Promise<unknown>) => {
    try {
      await work;
      reached = true;
    } catch (error) {
      reached = typeof (error as { responseCode?: unknown }).responseCode === 'number';
      throw error;
    }
  };
  return {
    send: async (mail) => noting((await transporter.get()).sendMail({ ...mail, headers: automaticHeaders })),
    verify: async () => noting((await transporter.get()).verify()),
    reachable: () => reached,
    close: transporter.close,
  };
}

/** Development stand-in for SMTP: each message becomes an `.eml` file in `dir`, whose path is logged. */
export function createFileTransport(dir: string, log: Logger): MailTransport {
  const transporter = lazily(async () =>
    (await loadNodemailer()).createTransport({ streamTransport: true, buffer: true, newline: 'unix' }));
  return {
    async send(mail) {
      const info = await (await transporter.get()).sendMail({ ...mail, headers: automaticHeaders });
      await mkdir(dir, { recursive: true, mode: 0o700 });
      // Named by time, then by the Message-ID's local part, so a directory listing is in order.
      const name = mail.messageId.replace(/^<|@.*$/g, '').replace(/[^A-Za-z0-9-]/g, '_');
      const path = join(dir, `${Date.now()}-${name}.eml`);
      await writeFile(path, info.message as Buffer, { mode: 0o600 });
      log.info('mail written', { path });
    },
    close: transporter.close,
  };
}

/**
 * nodemailer is loaded when the first message goes out, not at start-up: loading it took 80 of
 * the 105 ms that loading the service took, and 10 MiB of resident memory, which an instance
 * that has sent no mail yet does not need (README, Performance).
 */
const loadNodemailer = async () => (await import('nodemailer')).default;

/** The transporter, made on first use; closing closes it if it was made. */
function lazily<T extends Transporter>(create: () => Promise<T>): { get(): Promise<T>; close(): void } {
  let made: Promise<T> | null = null;
  return {
    get: () => (made ??= create()),
    close: () => void made?.then((transporter) => transporter.close(), () => {}),
  };
}

/**
 * True for a failure that will not change on retry: an SMTP reply 5xx (an unknown recipient), or
 * an EENVELOPE that no server answered, an address nodemailer cannot put in an envelope
 * (`x@evil.test/a:b` reads as a group and leaves no recipient; it was retried twelve times). A
 * server's refusal of a recipient is EENVELOPE too, with its reply code, which then decides.
 */
export function isPermanentFailure(error: unknown): boolean {
  const { responseCode, code } = (error ?? {}) as { responseCode?: unknown; code?: unknown };
  if (typeof responseCode === 'number') return responseCode >= 500 && responseCode < 600;
  return code === 'EENVELOPE';
}

/**
 * The spec's pattern lets a domain hold `/`, `:` and brackets, so an address may name an IP
 * literal (`x@[10.1.2.3]`), an IP address (`x@1.2.3.4`) or no host at all. The API takes what the
 * pattern takes, but mail goes only to a host name: an IP address would have the relay deliver
 * to whatever address a stranger typed, an internal one too, and no owner needs one
 * (docs/security.md).
 */
const hostNameAddress = /@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;
/**
 * A last label of digits or of `0x` and hex digits: resolvers and URL parsers read such a domain
 * as an IPv4 address (`127.1`, `0x7f.1`, `2130706433`), and no top-level domain is one.
 */
const numericLastLabel = /[@.](?:[0-9]+|0x[0-9a-f]*)$/i;

/** Throws a permanent failure (EENVELOPE) for an address whose domain is not a host name, an IP address included. */
export function assertMailable(address: string): void {
  if (hostNameAddress.test(address) && !numericLastLabel.test(address)) return;
  throw Object.assign(new Error('the address\'s domain is not a host name'), { code: 'EENVELOPE' });
}
