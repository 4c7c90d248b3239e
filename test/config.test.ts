import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  ConfigError,
  decodeWebhookSecret,
  defaultScrypt,
  formatScryptParams,
  lookalikeWarnings,
  parseConfig,
  parseDatabaseUrl,
  parseScryptParams,
} from '../src/config/config.ts';

const secret = 's'.repeat(32);

describe('parseConfig', () => {
  it('has defaults that need nothing from the environment', () => {
    const config = parseConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.databaseUrl, null);
    assert.equal(config.smtpUrl, null);
    assert.equal(config.tokenSecrets, null);
    assert.equal(config.mailFrom, 'Accounts <no-reply@localhost>');
    assert.equal(config.tokenTtlSeconds, 900);
    assert.equal(config.refreshTtlSeconds, 30 * 24 * 3600);
    assert.equal(config.tokenIssuer, 'account-service');
    assert.equal(config.tokenAudience, null);
    assert.equal(config.regCodeTtlSeconds, 1800);
    assert.equal(config.resetCodeTtlSeconds, 900);
    assert.equal(config.emailCodeTtlSeconds, 1800);
    assert.deepEqual(config.scrypt, defaultScrypt);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.hashConcurrency, 4);
    assert.equal(config.rateLimit, 20);
    assert.equal(config.trustProxy, 0);
    assert.deepEqual(config.corsOrigins, []);
    assert.match(config.dataDir, /\.data$/);
    assert.deepEqual(config.warnings, []);
    assert.deepEqual(config.database, { statementTimeoutMs: 5_000, lockTimeoutMs: 2_000, queueTimeoutMs: 2_000 });
  });

  it('reads the database bounds, 0 leaving a timeout to the server', () => {
    const config = parseConfig({ DATABASE_STATEMENT_TIMEOUT: '0', DATABASE_LOCK_TIMEOUT: '250', DATABASE_QUEUE_TIMEOUT: '400' });
    assert.deepEqual(config.database, { statementTimeoutMs: 0, lockTimeoutMs: 250, queueTimeoutMs: 400 });
  });

  it('reads every variable', () => {
    const config = parseConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u:p@db:5432/accounts',
      DATA_DIR: '/tmp/x',
      SMTP_URL: 'smtps://u:p@mail:465',
      MAIL_FROM: 'Me <me@example.com>',
      TOKEN_SECRET: `${secret},${'t'.repeat(40)}`,
      ENCRYPTION_KEYS: `k2:${Buffer.alloc(32, 2).toString('base64')}, k1:${Buffer.alloc(32, 1).toString('base64')}`,
      TOKEN_ALG: 'ES256',
      TOKEN_TTL: '600',
      REG_CODE_TTL: '900',
      RESET_CODE_TTL: '600',
      EMAIL_CODE_TTL: '3600',
      REFRESH_TTL: '86400',
      TOKEN_ISSUER: 'https://accounts.example',
      TOKEN_AUDIENCE: 'https://api.example',
      SCRYPT_PARAMS: 'ln=16,r=8,p=3',
      LOG_LEVEL: 'debug',
      HASH_CONCURRENCY: '2',
      RATE_LIMIT: '0',
      TRUST_PROXY: '1',
      CORS_ORIGINS: 'https://a.example, http://localhost:3000',
    });
    assert.equal(config.hashConcurrency, 2);
    assert.equal(config.rateLimit, 0);
    assert.equal(config.trustProxy, 1);
    assert.deepEqual(config.corsOrigins, ['https://a.example', 'http://localhost:3000']);
    assert.equal(config.port, 9000);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.databaseUrl, 'postgres://u:p@db:5432/accounts');
    assert.equal(config.dataDir, '/tmp/x');
    assert.equal(config.smtpUrl, 'smtps://u:p@mail:465');
    assert.equal(config.mailFrom, 'Me <me@example.com>');
    assert.deepEqual(config.tokenSecrets?.map(String), [secret, 't'.repeat(40)]);
    assert.deepEqual(config.encryptionKeys, [{ id: 'k2', key: Buffer.alloc(32, 2) }, { id: 'k1', key: Buffer.alloc(32, 1) }]);
    assert.equal(config.tokenAlg, 'ES256');
    assert.equal(config.tokenTtlSeconds, 600);
    assert.equal(config.regCodeTtlSeconds, 900);
    assert.equal(config.resetCodeTtlSeconds, 600);
    assert.equal(config.emailCodeTtlSeconds, 3600);
    assert.equal(config.refreshTtlSeconds, 86400);
    assert.equal(config.tokenIssuer, 'https://accounts.example');
    assert.equal(config.tokenAudience, 'https://api.example');
    assert.deepEqual(config.scrypt, { ln: 16, r: 8, p: 3 });
    assert.equal(config.logLevel, 'debug');
  });

  it('refuses bad values with one line naming the variable', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ PORT: 'eighty' }, /^PORT must be a whole number from 0 to 65535/],
      [{ PORT: '70000' }, /^PORT /],
      [{ PORT: '-1' }, /^PORT /],
      [{ TOKEN_TTL: '1.5' }, /^TOKEN_TTL /],
      [{ TOKEN_TTL: '10' }, /^TOKEN_TTL /],
      [{ REG_CODE_TTL: '0' }, /^REG_CODE_TTL /],
      [{ RESET_CODE_TTL: '59' }, /^RESET_CODE_TTL /],
      [{ EMAIL_CODE_TTL: '86401' }, /^EMAIL_CODE_TTL /],
      [{ METRICS_TOKEN: 'short' }, /^METRICS_TOKEN must be 16 to 256 printable characters without spaces$/],
      [{ REFRESH_TTL: 'forever' }, /^REFRESH_TTL /],
      [{ TOKEN_ISSUER: 'has space' }, /^TOKEN_ISSUER /],
      [{ TOKEN_AUDIENCE: 'x'.repeat(201) }, /^TOKEN_AUDIENCE /],
      [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of debug, info, warn, error/],
      [{ DATABASE_URL: 'not a url', TOKEN_SECRET: secret }, /^DATABASE_URL must look like postgres:\/\/user:password@host:port\/database/],
      [{ DATABASE_URL: 'mysql://db/x', TOKEN_SECRET: secret }, /^DATABASE_URL must look like/],
      [{ DATABASE_STATEMENT_TIMEOUT: '-1' }, /^DATABASE_STATEMENT_TIMEOUT /],
      [{ DATABASE_LOCK_TIMEOUT: '1s' }, /^DATABASE_LOCK_TIMEOUT /],
      [{ DATABASE_QUEUE_TIMEOUT: '0' }, /^DATABASE_QUEUE_TIMEOUT /],
      [{ DATABASE_URL: 'postgres://db/x' }, /^TOKEN_SECRET is required when DATABASE_URL is set/],
      [{ DATABASE_URL: 'postgres://db/x', TOKEN_SECRET: secret }, /^ENCRYPTION_KEYS is required when DATABASE_URL is set \(comma-separated id:key pairs/],
      [{ DATABASE_URL: 'postgres://db/x', TOKEN_ALG: 'ES256' }, /^ENCRYPTION_KEYS is required/],
      [{ ENCRYPTION_KEYS: 'k1' }, /^ENCRYPTION_KEYS entry 1 is not id:key/],
      [{ ENCRYPTION_KEYS: `k1:${Buffer.alloc(32).toString('base64')},k2:${Buffer.alloc(16).toString('base64')}` }, /^ENCRYPTION_KEYS entry 2 is not id:key/],
      [{ ENCRYPTION_KEYS: `k1:${Buffer.alloc(32).toString('base64')},k1:${Buffer.alloc(32, 1).toString('base64')}` }, /^ENCRYPTION_KEYS names the key id k1 twice$/],
      [{ TOKEN_SECRET: Buffer.alloc(32, 5).toString('base64'), ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 5).toString('base64')}` }, /^ENCRYPTION_KEYS entry 1 is also a TOKEN_SECRET/],
      [{ TOKEN_ALG: 'RS256' }, /^TOKEN_ALG must be one of HS256, ES256/],
      [{ SMTP_URL: 'http://mail' }, /^SMTP_URL must be a URL/],
      [{ TOKEN_SECRET: 'short' }, /^TOKEN_SECRET entry 1 is shorter than 32 bytes$/],
      [{ TOKEN_SECRET: `${secret},short` }, /^TOKEN_SECRET entry 2 /],
      [{ SCRYPT_PARAMS: 'N=16384' }, /^SCRYPT_PARAMS must look like ln=15,r=8,p=3/],
      [{ SCRYPT_PARAMS: 'ln=0,r=8,p=1' }, /^SCRYPT_PARAMS /],
      [{ SCRYPT_PARAMS: 'ln=21,r=8,p=1' }, /^SCRYPT_PARAMS /],
      [{ HASH_CONCURRENCY: '0' }, /^HASH_CONCURRENCY /],
      [{ RATE_LIMIT: '-5' }, /^RATE_LIMIT /],
      [{ TRUST_PROXY: '11' }, /^TRUST_PROXY /],
      [{ CORS_ORIGINS: 'https://app.example.com/' }, /^CORS_ORIGINS must be a comma-separated list of origins/],
      [{ CORS_ORIGINS: 'app.example.com' }, /^CORS_ORIGINS /],
      [{ CORS_ORIGINS: 'ftp://x.y' }, /^CORS_ORIGINS /],
      [{ HOST: 'not a host' }, /^HOST must be an IP address \(127\.0\.0\.1, 0\.0\.0\.0, ::\) or a host name, got "not a host"$/],
      [{ HOST: 'http://example.com' }, /^HOST /],
      [{ HOST: '[::1]' }, /^HOST /],
      [{ HOST: '256.1.1.1' }, /^HOST /],
      [{ HOST: 'under_score' }, /^HOST /],
      [{ HOST: '-leading.example' }, /^HOST /],
      [{ HOST: `${'a'.repeat(64)}.example` }, /^HOST /],
      [{ MAIL_FROM: 'Accounts' }, /^MAIL_FROM must be an address or Name <address> \(quote a name that has a comma\), got "Accounts"$/],
      [{ MAIL_FROM: 'Doe, John <john@example.com>' }, /^MAIL_FROM /],
      [{ MAIL_FROM: 'a@example.com, b@example.com' }, /^MAIL_FROM /],
      [{ MAIL_FROM: 'Accounts <no-reply@localhost' }, /^MAIL_FROM /],
      [{ MAIL_FROM: 'Accounts <>' }, /^MAIL_FROM /],
      [{ MAIL_FROM: 'no reply@example.com' }, /^MAIL_FROM /],
      [{ MAIL_FROM: 'a@example.com\r\nBcc: victim@example.com' }, /^MAIL_FROM .*\\r\\nBcc/],
    ];
    for (const [env, message] of cases) {
      assert.throws(() => parseConfig(env), (error: unknown) => error instanceof ConfigError && message.test(error.message) && !error.message.includes('\n'), JSON.stringify(env));
    }
  });

  it('takes any IP address or host name for HOST, and an address with or without a name for MAIL_FROM', () => {
    for (const host of ['0.0.0.0', '::', '::1', '192.168.1.10', 'localhost', 'api.example.com', 'node-1.internal.', 'xn--bcher-kva.example']) {
      assert.equal(parseConfig({ HOST: host }).host, host);
    }
    for (const from of ['no-reply@example.com', 'Accounts <no-reply@localhost>', '"Doe, John" <john@example.com>', 'Zoë Ça <z+tag@mail.example.org>', '<a@b.c>']) {
      assert.equal(parseConfig({ MAIL_FROM: from }).mailFrom, from);
    }
  });

  it('never echoes a secret or a URL password in an error', () => {
    assert.throws(() => parseConfig({ TOKEN_SECRET: 'hunter2' }), (error: Error) => !error.message.includes('hunter2'));
    assert.throws(() => parseConfig({ SMTP_URL: 'ftp://user:hunter2@x' }), (error: Error) => !error.message.includes('hunter2'));
  });

  it('warns about scrypt parameters weaker than the default', () => {
    assert.match(parseConfig({ SCRYPT_PARAMS: 'ln=4,r=8,p=1' }).warnings[0]!, /weaker than the default ln=15,r=8,p=3/);
    assert.deepEqual(parseConfig({ SCRYPT_PARAMS: 'ln=16,r=8,p=3' }).warnings, []);
  });

  it('refuses scrypt parameters that need more than 256 MiB per hash, in one line', () => {
    assert.throws(() => parseConfig({ SCRYPT_PARAMS: 'ln=20,r=99,p=1' }), (error: Error) => error instanceof ConfigError && /SCRYPT_PARAMS ln=20,r=99,p=1 needs 12672 MiB per hash/.test(error.message) && !error.message.includes('\n'));
    assert.equal(parseConfig({ SCRYPT_PARAMS: 'ln=18,r=8,p=1' }).scrypt.ln, 18, '256 MiB is allowed');
  });

  it('warns in one line each when a production database runs with mail to files or open metrics', () => {
    const env = { DATABASE_URL: 'postgres://db/accounts', TOKEN_SECRET: secret, ENCRYPTION_KEYS: `k1:${Buffer.alloc(32).toString('base64')}` };
    const warnings = parseConfig(env).warnings;
    assert.equal(warnings.length, 2);
    assert.match(warnings[0]!, /^SMTP_URL is not set: mail, codes included, is written as plain-text files/);
    assert.match(warnings[1]!, /^METRICS_TOKEN is not set: \/metrics is open/);
    assert.deepEqual(parseConfig({ ...env, SMTP_URL: 'smtp://mail:25', METRICS_TOKEN: 'm'.repeat(16) }).warnings, []);
    assert.deepEqual(parseConfig({}).warnings, [], 'the embedded development mode is not warned about');
  });

  it('warns, in one line each, about a variable that looks like one of ours but is not', () => {
    const warnings = parseConfig({ TOKEN_TLL: '60', DATABSE_URL: 'postgres://x', SMTP_HOST: 'mail', PROT: '8081' }).warnings;
    assert.equal(warnings.length, 4, warnings.join('\n'));
    assert.match(warnings[0]!, /^TOKEN_TLL is not a variable of this service and is ignored; did you mean .*TOKEN_TTL\b/);
    assert.match(warnings[1]!, /^DATABSE_URL .* did you mean DATABASE_URL\?$/);
    assert.match(warnings[2]!, /^SMTP_HOST .* did you mean SMTP_URL\?$/);
    assert.match(warnings[3]!, /^PROT .* did you mean PORT\?$/);
    for (const warning of warnings) assert.equal(warning.includes('\n'), false);
    assert.equal(warnings.some((warning) => warning.includes('postgres://x')), false, 'a value is never echoed');
  });

  it('warns of a database the service will not use: another name for DATABASE_URL, or PGHOST without it', () => {
    const warnings = parseConfig({ POSTGRES_URL: 'postgres://u:hunter2@db/x', PGHOST: 'db' }).warnings;
    assert.deepEqual(warnings, [
      'POSTGRES_URL is not read by this service; set DATABASE_URL (postgres://user:password@host:port/database)',
      'PGHOST is set but DATABASE_URL is not: the embedded database is used; set DATABASE_URL (postgres:/// takes the host from PGHOST)',
    ]);
    const withUrl = { DATABASE_URL: 'postgres:///accounts', TOKEN_SECRET: secret, ENCRYPTION_KEYS: `k1:${Buffer.alloc(32).toString('base64')}`, PGHOST: 'db', SMTP_URL: 'smtp://mail', METRICS_TOKEN: 'm'.repeat(16) };
    assert.deepEqual(parseConfig(withUrl).warnings, [], 'the driver reads PGHOST for a URL without a host');
  });

  it('refuses NODE_ENV=production without DATABASE_URL or SMTP_URL, naming what is missing', () => {
    const production = { NODE_ENV: 'production', TOKEN_SECRET: secret, ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}` };
    assert.throws(() => parseConfig(production), /^ConfigError: DATABASE_URL and SMTP_URL must be set with NODE_ENV=production/);
    assert.throws(() => parseConfig({ ...production, DATABASE_URL: 'postgres://db/accounts' }), /^ConfigError: SMTP_URL must be set with NODE_ENV=production/);
    assert.equal(parseConfig({ ...production, DATABASE_URL: 'postgres://db/accounts', SMTP_URL: 'smtp://mail' }).smtpUrl, 'smtp://mail');
  });

  it('leaves alone the variables of everything else: the shell, Node, npm, a container, Kubernetes', () => {
    const env = { PATH: '/bin', HOME: '/root', HOSTNAME: 'box', PWD: '/', USER: 'node', TERM: 'xterm', LANG: 'C', NODE_ENV: 'development', NODE_VERSION: '24', KUBERNETES_PORT: 'tcp://10.0.0.1:443', npm_lifecycle_event: 'start', PGPASSWORD: 'x' };
    assert.deepEqual(parseConfig(env).warnings, []);
  });

  it('finds look-alikes by a shared first word or a small edit distance', () => {
    assert.deepEqual(lookalikeWarnings(['TOKEN_X', 'HOST', 'HOTS', 'LOG_LEVEL'], ['HOST', 'TOKEN_TTL', 'LOG_LEVEL']).map((warning) => warning.split(' ')[0]), ['TOKEN_X', 'HOTS']);
  });

  it('formats and parses scrypt parameters alike', () => {
    assert.deepEqual(parseScryptParams(formatScryptParams({ ln: 12, r: 4, p: 2 })), { ln: 12, r: 4, p: 2 });
  });
});

describe('parseDatabaseUrl', () => {
  it('accepts every form the postgres driver reads', () => {
    for (const url of [
      'postgres://u:p@db:5432/accounts',
      'postgresql://db/accounts',
      'postgres://u@h1:5432,h2:5433/accounts?target_session_attrs=read-write',
      'postgres://u@10.0.0.1,10.0.0.2:6432/db?target_session_attrs=primary&connect_timeout=3',
      'postgres://u:p@[::1]:5432,[fd00::2]/db',
      'postgres://u:p%40ss@db.internal./accounts?prepare=false&sslmode=require',
      'postgres:///accounts',
      'postgres://',
      'postgres://%2Fvar%2Frun%2Fpostgresql/accounts',
    ]) {
      assert.equal(parseDatabaseUrl(url), url, url);
    }
    assert.equal(parseDatabaseUrl(''), null);
    assert.equal(parseDatabaseUrl(undefined), null);
  });

  it('refuses what the driver would fail on, naming the part and never echoing the value', () => {
    for (const [url, message] of [
      ['http://db/x', /^DATABASE_URL must look like/],
      ['postgres://u:secret@db:99999/x', /^DATABASE_URL host 1 must be host, host:port/],
      ['postgres://u:secret@h1:5432,,h2/x', /^DATABASE_URL host 2 /],
      ['postgres://u:secret@h1,h2:port/x', /^DATABASE_URL host 2 /],
      ['postgres://u:secret@db/x?target_session_attrs=any', /^DATABASE_URL target_session_attrs must be one of read-write, /],
      ['postgres://u:secret@db/x?prepare=no', /^DATABASE_URL prepare must be true or false$/],
      ['postgres://u:sec%ZZret@db/x', /^DATABASE_URL is not a valid URL/],
    ] as const) {
      assert.throws(() => parseDatabaseUrl(url), (error: Error) => error instanceof ConfigError && message.test(error.message) && !error.message.includes('secret'), url);
    }
  });
});

describe('WEBHOOK_URL and WEBHOOK_SECRET', () => {
  const whsec = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const refused = (env: NodeJS.ProcessEnv, message: RegExp) => assert.throws(() => parseConfig(env), (error: Error) => error instanceof ConfigError && message.test(error.message) && !error.message.includes(whsec.slice(6)));

  it('are off by default', () => {
    assert.equal(parseConfig({}).webhook, null);
  });

  it('take an http(s) URL and one or more whsec_ secrets, the first current', () => {
    const second = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    const config = parseConfig({ WEBHOOK_URL: 'https://app.example.com/hooks', WEBHOOK_SECRET: `${whsec} ${second}` });
    assert.equal(config.webhook?.url, 'https://app.example.com/hooks');
    assert.deepEqual(config.webhook?.keys, [Buffer.alloc(32, 7), Buffer.alloc(24, 9)]);
    assert.equal(parseConfig({ WEBHOOK_URL: 'http://10.0.0.5:9000/', WEBHOOK_SECRET: `${whsec},${second}` }).webhook?.keys.length, 2);
  });

  it('refuse one without the other, another scheme, and a secret that is not whsec_ of 24 to 64 bytes, without echoing it', () => {
    refused({ WEBHOOK_URL: 'https://app.example.com/hooks' }, /^WEBHOOK_SECRET is required when WEBHOOK_URL is set/);
    refused({ WEBHOOK_SECRET: whsec }, /^WEBHOOK_SECRET is set but WEBHOOK_URL is not$/);
    refused({ WEBHOOK_URL: 'ftp://app.example.com/hooks', WEBHOOK_SECRET: whsec }, /^WEBHOOK_URL must be a URL of the form https:/);
    refused({ WEBHOOK_URL: 'not a url', WEBHOOK_SECRET: whsec }, /^WEBHOOK_URL is not a valid URL$/);
    refused({ WEBHOOK_URL: 'https://app.example.com/', WEBHOOK_SECRET: whsec.slice(6) }, /^WEBHOOK_SECRET entry 1 is not whsec_/);
    refused({ WEBHOOK_URL: 'https://app.example.com/', WEBHOOK_SECRET: `${whsec} whsec_c2hvcnQ=` }, /^WEBHOOK_SECRET entry 2 is not whsec_/);
  });

  it('refuse a URL that points at the service itself', () => {
    const self = /^WEBHOOK_URL points at this service itself \(port 8080\)/;
    for (const url of ['http://127.0.0.1:8080/hooks', 'http://localhost:8080/', 'http://127.1.2.3:8080/', 'http://[::1]:8080/', 'http://[::ffff:127.0.0.1]:8080/', 'http://0.0.0.0:8080/', 'http://api.localhost:8080/']) {
      refused({ WEBHOOK_URL: url, WEBHOOK_SECRET: whsec }, self);
    }
    refused({ WEBHOOK_URL: 'http://svc.internal:8080/', WEBHOOK_SECRET: whsec, HOST: 'svc.internal' }, self);
    refused({ WEBHOOK_URL: 'https://127.0.0.1/', WEBHOOK_SECRET: whsec, PORT: '443' }, /^WEBHOOK_URL points at this service itself \(port 443\)/);
    refused({ WEBHOOK_URL: 'http://localhost/', WEBHOOK_SECRET: whsec, PORT: '80' }, /^WEBHOOK_URL points at this service itself \(port 80\)/);
    // Listening on every address: any address of this machine's interfaces is the service.
    refused({ WEBHOOK_URL: 'http://127.0.0.1:9000/', WEBHOOK_SECRET: whsec, HOST: '0.0.0.0', PORT: '9000' }, /itself/);
  });

  it('accept the same machine on another port, and another host on the same port', () => {
    assert.notEqual(parseConfig({ WEBHOOK_URL: 'http://127.0.0.1:9000/hooks', WEBHOOK_SECRET: whsec }).webhook, null);
    assert.notEqual(parseConfig({ WEBHOOK_URL: 'http://app.example.com:8080/hooks', WEBHOOK_SECRET: whsec }).webhook, null);
    assert.notEqual(parseConfig({ WEBHOOK_URL: 'http://10.9.8.7:8080/hooks', WEBHOOK_SECRET: whsec }).webhook, null, 'not an address of this machine (HOST is 127.0.0.1)');
  });
});

describe('decodeWebhookSecret', () => {
  const secretOf = (bytes: Buffer) => `whsec_${bytes.toString('base64')}`;
  it('takes whsec_ and the base64 of 24 to 64 bytes', () => {
    const key = randomBytes(32);
    assert.deepEqual(decodeWebhookSecret(secretOf(key)), key);
    assert.equal(decodeWebhookSecret(secretOf(randomBytes(24)))?.length, 24);
    assert.equal(decodeWebhookSecret(secretOf(randomBytes(64)))?.length, 64);
  });

  it('refuses anything else', () => {
    assert.equal(decodeWebhookSecret(randomBytes(32).toString('base64')), null, 'no prefix');
    assert.equal(decodeWebhookSecret(secretOf(randomBytes(23))), null, 'too short');
    assert.equal(decodeWebhookSecret(secretOf(randomBytes(65))), null, 'too long');
    assert.equal(decodeWebhookSecret('whsec_'), null, 'empty');
    const base64url = randomBytes(32).toString('base64url').replace(/[-_]/g, '');
    assert.equal(decodeWebhookSecret(`whsec_${base64url}!`), null, 'not base64');
    assert.equal(decodeWebhookSecret(`whsec_${'A'.repeat(42)}B=`), null, 'unused bits set: not the canonical encoding');
    assert.equal(decodeWebhookSecret(`whsk_${randomBytes(32).toString('base64')}`), null, 'an asymmetric key');
  });
});

describe('ADMIN_PORT, ADMIN_HOST and ADMIN_TOKEN', () => {
  const token = 'Zk3q-9vR_w2Lx7pT!aB4cD6eF8gH0jK1';
  const on = { ADMIN_PORT: '9090', ADMIN_TOKEN: token };
  const refused = (env: NodeJS.ProcessEnv, message: RegExp) => {
    const secret = env.ADMIN_TOKEN ?? token;
    const matches = (error: Error) =>
      error instanceof ConfigError && message.test(error.message) && !error.message.includes(secret);
    assert.throws(() => parseConfig(env), matches);
  };

  it('are off by default: no admin API', () => {
    assert.equal(parseConfig({}).admin, null);
  });

  it('listen on loopback unless ADMIN_HOST says otherwise, which is warned of', () => {
    assert.deepEqual(parseConfig(on).admin, { host: '127.0.0.1', port: 9090, token });
    assert.deepEqual(parseConfig({ ...on, ADMIN_HOST: '::1' }).warnings, []);
    const wide = parseConfig({ ...on, ADMIN_HOST: '10.0.0.5' });
    assert.equal(wide.admin?.host, '10.0.0.5');
    assert.match(wide.warnings.join('\n'), /^ADMIN_HOST 10\.0\.0\.5 is not a loopback address/m);
  });

  it('refuse a missing, weak or borrowed token, the public port, and a token or host alone, never echoing it', () => {
    refused({ ADMIN_PORT: '9090' }, /^ADMIN_TOKEN is required when ADMIN_PORT is set/);
    refused({ ...on, ADMIN_TOKEN: token.slice(0, 31) }, /^ADMIN_TOKEN must be 32 to 256 printable characters/);
    refused({ ...on, ADMIN_TOKEN: 'ab'.repeat(20) }, /at least 10 of them different/);
    refused({ ...on, ADMIN_TOKEN: `${token} with spaces` }, /^ADMIN_TOKEN must be/);
    refused({ ...on, METRICS_TOKEN: token }, /^ADMIN_TOKEN must differ from METRICS_TOKEN/);
    refused({ ADMIN_PORT: '8080', ADMIN_TOKEN: token }, /^ADMIN_PORT must differ from PORT \(8080\)/);
    refused({ ADMIN_PORT: '70000', ADMIN_TOKEN: token }, /^ADMIN_PORT must be a whole number from 0 to 65535/);
    refused({ ADMIN_TOKEN: token }, /^ADMIN_HOST and ADMIN_TOKEN need ADMIN_PORT \(the admin API\)$/);
    refused({ ADMIN_HOST: '127.0.0.1' }, /^ADMIN_HOST and ADMIN_TOKEN need ADMIN_PORT \(the admin API\)$/);
  });
});
