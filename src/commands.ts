import type { Logger } from './log.ts';
import { resealAll } from './reseal.ts';
import { createSealer } from './sealing.ts';
import type { ServiceConfig } from './service.ts';
import { addSigningKey, removeSigningKey, signingKeyLeadMs } from './sessions/signing-keys.ts';
import { connectDatabase, type Sql } from './storage/db.ts';
import { loadMigrations, migrate } from './storage/migrations.ts';

export const commandUsage = `Commands, run with the service's environment:
  reseal                    seal every stored secret again under the first ENCRYPTION_KEYS key
                            (after it, the other keys can be removed); exits 1 if a value opens
                            with no configured key
  signing-key list          the ES256 token signing keys (TOKEN_ALG=ES256)
  signing-key rotate        add a signing key; it signs in two minutes, the old one verifies
                            until its tokens expire
  signing-key remove KID    delete a key: its tokens are refused within a minute
`;

export const commandNames = ['reseal', 'signing-key'];

/** Runs an operator's command against the database of `config`; returns the exit code. Output is JSON lines on stdout. */
export async function runCommand(args: string[], config: ServiceConfig, log: Logger, print: (line: string) => void): Promise<number> {
  const sql = connectDatabase(config.databaseUrl);
  try {
    await migrate(sql, await loadMigrations());
    const sealer = createSealer(config.encryptionKeys);
    const [name, verb, kid] = args;
    if (name === 'reseal') {
      const report = await resealAll(sql, sealer, config.tokenSecrets);
      print(JSON.stringify(report));
      if (Object.keys(report.unopenable).length === 0) return 0;
      log.error('some sealed values open with no configured key; keep the old key in ENCRYPTION_KEYS (or TOKEN_SECRET, for values from before it) and run reseal again', report.unopenable);
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
      const keys = await listSigningKeys(sql);
      if (keys[0]?.kid === kid) {
        log.error('this is the newest signing key; run signing-key rotate first, and remove it after the new key signs');
        return 1;
      }
      if (await removeSigningKey(sql, kid)) return 0;
      log.error('no signing key has this kid', { kid });
      return 1;
    }
    log.error(`unknown command: ${args.join(' ')}`);
    return 2;
  } finally {
    await sql.end();
  }
}

async function listSigningKeys(sql: Sql): Promise<{ kid: string; created_at: string }[]> {
  const rows = await sql<{ kid: string; createdAt: Date }[]>`SELECT kid, created_at AS "createdAt" FROM signing_keys ORDER BY created_at DESC, kid`;
  return rows.map((row) => ({ kid: row.kid, created_at: row.createdAt.toISOString() }));
}
