import { adminUsage, runAdminCommand } from './features/operators/command.ts';
import { createPasswordHasher } from './core/passwords.ts';
import { loadKeyedHashes } from './core/keyed-hashes.ts';
import type { Logger } from './telemetry/log.ts';
import { createMetrics } from './telemetry/metrics.ts';
import type { UseCaseDeps } from './core/transaction.ts';
import { disabledWebhooks, enabledWebhooks } from './webhooks/events.ts';
import { resealAll } from './reseal.ts';
import { createSealer } from './core/sealing.ts';
import { createMailRenderer, loadMailTemplates } from './mail/templates.ts';
import type { ServiceConfig } from './service.ts';
import { addSigningKey, removeSigningKey, signingKeyLeadMs } from './core/signing-keys.ts';
import { connectDatabase, type Sql } from './storage/db.ts';
import { loadMigrations, migrate } from './storage/migrations.ts';

export const commandUsage = `Commands, run with the service's environment:
  reseal                    seal every stored secret again under the first ENCRYPTION_KEYS key
                            (after it, the other keys can be removed); exits 1 if a value opens
                            with no configured key
  signing-key list          the ES256 token signing keys (TOKEN_ALG=ES256)
  signing-key rotate        add a signing key; it signs in two minutes, the old one verifies
                            until its tokens expire
  signing-key remove KID    delete a key: its tokens are refused within a minute; refused for
                            the newest key, and until another key may sign (two minutes after
                            signing-key rotate)
  admin …                   operate accounts, mail and webhooks (docs/operations.md, "Operating
                            accounts"); --json for one JSON line; exit 0 done, 1 not found,
                            2 bad arguments:
${adminUsage}
`;

export const commandNames = ['reseal', 'signing-key', 'admin'];

/** Runs an operator's command against the database of `config`; returns the exit code. JSON lines on stdout. */
export async function runCommand(
  args: string[], config: ServiceConfig, log: Logger, print: (line: string) => void,
): Promise<number> {
  const sql = connectDatabase(config.databaseUrl);
  try {
    await migrate(sql, await loadMigrations());
    const sealer = createSealer(config.encryptionKeys);
    const [name, verb, kid] = args;
    if (name === 'admin') {
      const deps = await commandDeps(sql, config, log);
      return await runAdminCommand(deps, args.slice(1), print, (line) => log.error(line));
    }
    if (name === 'reseal') {
      const report = await resealAll(sql, sealer, config.tokenSecrets);
      print(JSON.stringify(report));
      if (Object.keys(report.unopenable).length === 0) return 0;
      const advice =
        'keep the old key in ENCRYPTION_KEYS (or TOKEN_SECRET, for values from before it) and run reseal again';
      log.error(`some sealed values open with no configured key; ${advice}`, report.unopenable);
      return 1;
    }
    if (name === 'signing-key' && verb === 'list' && kid === undefined) {
      for (const key of await listSigningKeys(sql)) print(JSON.stringify(key));
      return 0;
    }
    if (name === 'signing-key' && verb === 'rotate' && kid === undefined) {
      const added = await addSigningKey(sql, sealer, new Date());
      print(JSON.stringify({ kid: added, signs_from: new Date(Date.now() + signingKeyLeadMs).toISOString() }));
      return 0;
    }
    if (name === 'signing-key' && verb === 'remove' && kid !== undefined) {
      const removal = await removeSigningKey(sql, kid, new Date());
      if (removal.outcome === 'removed') return 0;
      if (removal.outcome === 'unknown') log.error('no signing key has this kid', { kid });
      if (removal.outcome === 'newest') {
        log.error(
          'this is the newest signing key; run signing-key rotate first, and remove it after the new key signs',
        );
      }
      if (removal.outcome === 'no-signer') {
        const from = removal.signsFrom.toISOString();
        log.error(`no key could sign until ${from}, when the newer key may sign: remove this one after then`, { kid });
      }
      return 1;
    }
    log.error(`unknown command: ${args.join(' ')}`);
    return 2;
  } finally {
    await sql.end();
  }
}

/**
 * The use cases' dependencies for a command: the service's own parts, except the workers,
 * which run in the service. Mail and webhook events a command queues are delivered by a
 * running instance at its next poll.
 */
export async function commandDeps(sql: Sql, config: ServiceConfig, log: Logger): Promise<UseCaseDeps> {
  const sealer = createSealer(config.encryptionKeys);
  const idle = { wake: () => {}, wakeLater: () => {} };
  return {
    sql,
    config,
    clock: () => new Date(),
    log,
    passwords: createPasswordHasher(config.scrypt),
    sealer,
    mailer: { ...createMailRenderer(loadMailTemplates(config.mailTemplatesDir), config), sealer },
    keys: await loadKeyedHashes(sql, sealer),
    // Commands start no sessions.
    announceSignIn: () => Promise.resolve(),
    outbox: idle,
    addressRequests: idle,
    webhooks: config.webhook === null ? disabledWebhooks : enabledWebhooks(idle.wake),
    metrics: createMetrics(),
  };
}

async function listSigningKeys(sql: Sql): Promise<{ kid: string; created_at: string }[]> {
  const rows = await sql<{ kid: string; createdAt: Date }[]>`
    SELECT kid, created_at AS "createdAt" FROM signing_keys ORDER BY created_at DESC, kid`;
  return rows.map((row) => ({ kid: row.kid, created_at: row.createdAt.toISOString() }));
}
