import { parseConfig } from '../../src/config/config.ts';
import { parseOidcSettings } from '../../src/features/oidc/settings.ts';
import { loadKeyedHashes, type KeyedHashes } from '../../src/core/keyed-hashes.ts';
import { createLogger } from '../../src/telemetry/log.ts';
import { createMailRenderer, type Mailer } from '../../src/mail/templates.ts';
import { createSealer, type Sealer } from '../../src/core/sealing.ts';
import { startService, type Service, type ServiceOptions } from '../../src/service.ts';
import { createTestDatabase } from './database.ts';
import { call, type CallOptions, type HttpResult } from './http.ts';
import { codeIn, startTestSmtp, type TestSmtp } from './smtp.ts';

export const testSecret = 'test-secret-that-is-long-enough-0123456789';
/** ENCRYPTION_KEYS of every test service: the id `test` and 32 bytes. */
export const testEncryptionKeys = `test:${Buffer.alloc(32, 7).toString('base64')}`;

/** The keyed hashes a service uses, as its tables hold them (for tests that read those tables). */
export function keyedHashesOf(app: { service: Service }, encryptionKeys = testEncryptionKeys): Promise<KeyedHashes> {
  return loadKeyedHashes(app.service.sql, createSealer(parseConfig({ ENCRYPTION_KEYS: encryptionKeys }).encryptionKeys!));
}

/** A mailer of the built-in texts only, for tests that queue mail themselves. */
export function builtInMailer(sealer: Sealer): Mailer {
  return { ...createMailRenderer(), sealer };
}

/** Real time plus an offset that a test can move forward. */
export type TestClock = { now(): Date; advance(seconds: number): void };

export function createTestClock(): TestClock {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    advance(seconds) {
      offsetMs += seconds * 1000;
    },
  };
}

export type TestService = {
  url: string;
  service: Service;
  smtp: TestSmtp;
  clock: TestClock;
  /** Every log line the service wrote, to check that no secret reaches the log. */
  logs: string[];
  call(method: string, path: string, options?: CallOptions): Promise<HttpResult>;
  /** Stops the service and starts it again on the same database and SMTP server. */
  restart(): Promise<void>;
  stop(): Promise<void>;
};

export type TestServiceOptions = {
  env?: Record<string, string>;
  outbox?: ServiceOptions['outbox'];
  webhooks?: ServiceOptions['webhooks'];
  passwords?: ServiceOptions['passwords'];
  httpTimeouts?: ServiceOptions['httpTimeouts'];
  onQuery?: ServiceOptions['onQuery'];
  /** A database of the test's own (for fault tests) instead of a fresh one on the shared server. */
  databaseUrl?: string;
};

/** The whole service over real HTTP, on a fresh PostgreSQL database, mailing a real SMTP server. */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const database = options.databaseUrl === undefined ? await createTestDatabase() : { url: options.databaseUrl, drop: async () => {} };
  const smtp = await startTestSmtp();
  const clock = createTestClock();
  const logs: string[] = [];
  const log = createLogger('debug', (line) => logs.push(line));
  const env = {
    DATABASE_URL: database.url,
    TOKEN_SECRET: testSecret,
    ENCRYPTION_KEYS: testEncryptionKeys,
    SMTP_URL: smtp.url,
    SCRYPT_PARAMS: 'ln=4,r=8,p=1',
    PORT: '0',
    // Every test calls from 127.0.0.1; the rate limit has tests of its own.
    RATE_LIMIT: '0',
    ACCOUNT_RATE_LIMIT: '0',
    ...options.env,
  };
  const parsed = parseConfig(env);
  const config = { ...parsed, oidc: parseOidcSettings(env, parsed.tokenIssuer) };
  const settled = { ...config, databaseUrl: database.url, tokenSecrets: config.tokenSecrets ?? [], encryptionKeys: config.encryptionKeys! };
  const start = () => startService({ config: settled, log, clock: clock.now, outbox: { pollMs: 200, wakeJitterMs: 20, backoffBaseMs: 100, ...options.outbox }, webhooks: options.webhooks, passwords: options.passwords, httpTimeouts: options.httpTimeouts, onQuery: options.onQuery });
  let service = await start().catch(async (error: unknown) => {
    await smtp.stop();
    await database.drop();
    throw error;
  });
  const handle: TestService = {
    get url() {
      return service.url;
    },
    get service() {
      return service;
    },
    smtp,
    clock,
    logs,
    call: (method, path, callOptions) => call(service.url, method, path, callOptions),
    async restart() {
      await service.stop();
      service = await start();
    },
    async stop() {
      await service.stop();
      await smtp.stop();
      await database.drop();
      // Every test that uses the service also checks the API document: no answer may carry a
      // status that the document does not list for its route.
      const undocumented = logs.filter((line) => line.includes('"msg":"undocumented status"'));
      if (undocumented.length > 0) throw new Error(`statuses missing from the API document: ${undocumented.join('')}`);
    },
  };
  return handle;
}

let counter = 0;
/** A name and address no other test in this database uses. */
export function uniqueUser(prefix = 'user'): { name: string; email: string; pwd: string } {
  counter += 1;
  const tag = `${prefix}-${process.pid}-${counter}`;
  return { name: tag, email: `${tag}@example.com`, pwd: `pw-${tag}`.slice(0, 32) };
}

/** Requests a code and returns it as the e-mail delivered it. */
export async function requestCode(app: TestService, user: { name: string; email: string; pwd: string; phone?: string | null }): Promise<string> {
  const before = app.smtp.messages.length;
  const response = await app.call('POST', '/acc/reg/code', { json: user });
  if (response.status !== 204) throw new Error(`code request failed: ${response.status} ${response.text}`);
  const mail = await app.smtp.waitFor((message, ) => message.to === user.email && message.subject === 'Your registration code' && app.smtp.messages.indexOf(message) >= before);
  return codeIn(mail);
}

/** Registers and activates an account; returns a bearer token for it. */
export async function registerAndSignIn(app: TestService, user = uniqueUser()): Promise<{ user: typeof user; token: string }> {
  const code = await requestCode(app, user);
  const activated = await app.call('POST', '/acc/reg', { json: { code } });
  if (activated.status !== 204) throw new Error(`activation failed: ${activated.status} ${activated.text}`);
  return { user, token: await signIn(app, user.name, user.pwd) };
}

export async function signIn(app: TestService, username: string, password: string): Promise<string> {
  const response = await app.call('POST', '/auth/token', { json: { grant_type: 'password', username, password } });
  if (response.status !== 200) throw new Error(`sign-in failed: ${response.status} ${response.text}`);
  return response.json.access_token as string;
}
