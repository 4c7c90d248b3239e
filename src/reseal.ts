import { createDecipheriv, hkdfSync } from 'node:crypto';
import type { Opened, SealPurpose, Sealer } from './core/sealing.ts';
import type { Sql } from './storage/db.ts';

/**
 * Moves every sealed value to the first key of ENCRYPTION_KEYS, so that an old key can be
 * removed: `node dist/main.js reseal` after a rotation, and each start while values sealed by a
 * version before sql/017 remain. Each value is replaced only if it has not changed since it was
 * read, so instances and the command can run at once.
 */
export type ResealReport = { resealed: number; unopenable: Record<string, number> };

type LegacyEncoding = 'base64' | 'utf8';
/** A sealed column: its table, the key to page by, the column bound into the seal (`row`), the purpose. */
type SealedColumn = {
  table: string; key: string; column: string; row: string; purpose: SealPurpose; legacyEncoding: LegacyEncoding;
};
const sealedColumn = (
  table: string, key: string, column: string, row: string, purpose: SealPurpose, legacyEncoding: LegacyEncoding,
): SealedColumn => ({ table, key, column, row, purpose, legacyEncoding });

/** Every sealed column; keyed_hash_keys last, as its old values mark an unfinished upgrade (sql/017). */
const sealedColumns: SealedColumn[] = [
  sealedColumn('second_factors', 'account_id', 'sealed_secret', 'account_id', 'totp-secret', 'base64'),
  sealedColumn('outbox', 'id', 'sealed_content', 'message_id', 'mail', 'utf8'),
  sealedColumn('signing_keys', 'kid', 'sealed_private_key', 'kid', 'signing-key', 'utf8'),
  sealedColumn('keyed_hash_keys', 'purpose', 'sealed_key', 'purpose', 'keyed-hash-key', 'base64'),
];

const batchSize = 500;
/** The version byte that sql/017 put before the values sealed under TOKEN_SECRET. */
const legacyVersion = 1;

/** True while keyed_hash_keys holds a value sealed before sql/017: the upgrade is not finished. */
export async function hasLegacySeals(sql: Sql): Promise<boolean> {
  const rows = await sql<{ sealed: Buffer }[]>`
    SELECT sealed_key AS sealed FROM keyed_hash_keys WHERE purpose IN ('address', 'loginIdentifier', 'client')`;
  return rows.some((row) => row.sealed[0] === legacyVersion);
}

/**
 * Seals again, under the first encryption key, every value sealed under another key, and every
 * value sealed before sql/017 (opened with `tokenSecrets`, the only use of TOKEN_SECRET for
 * data, and only for this). Values that no key opens are counted by table and left as they are.
 */
export async function resealAll(sql: Sql, sealer: Sealer, tokenSecrets: readonly Buffer[]): Promise<ResealReport> {
  const legacyKeys = tokenSecrets.map((secret) =>
    Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'account-service outbox v1', 32)));
  const report: ResealReport = { resealed: 0, unopenable: {} };
  for (const spec of sealedColumns) {
    let after: string | null = null;
    for (;;) {
      const rows = await readBatch(sql, spec, after);
      for (const { key, row, sealed } of rows) {
        const opened = sealed[0] === legacyVersion
          ? openLegacy(legacyKeys, sealed.subarray(1), spec.legacyEncoding)
          : sealer.open(sealed, spec.purpose, row);
        if (opened === null) report.unopenable[spec.table] = (report.unopenable[spec.table] ?? 0) + 1;
        else if (!opened.current) {
          const resealed = sealer.seal(opened.plaintext, spec.purpose, row);
          const updated = await sql`
            UPDATE ${sql(spec.table)} SET ${sql(spec.column)} = ${resealed}
            WHERE ${sql(spec.key)} = ${key} AND ${sql(spec.column)} = ${sealed}`;
          report.resealed += updated.count;
        }
      }
      if (rows.length < batchSize) break;
      after = rows.at(-1)!.key;
    }
  }
  return report;
}

type SealedRow = { key: string; row: string; sealed: Buffer };

async function readBatch(sql: Sql, spec: SealedColumn, after: string | null): Promise<SealedRow[]> {
  const { table, key, column, row } = spec;
  return sql<SealedRow[]>`
    SELECT ${sql(key)}::text AS key, ${sql(row)}::text AS row, ${sql(column)} AS sealed FROM ${sql(table)}
    WHERE ${sql(column)} IS NOT NULL ${after === null ? sql`` : sql`AND ${sql(key)} > ${after}`}
    ORDER BY ${sql(key)} LIMIT ${batchSize}`;
}

/** A value of the format before sql/017: `IV (12) | tag (16) | ciphertext`, AES-256-GCM, no associated data. */
function openLegacy(keys: readonly Buffer[], sealed: Buffer, encoding: LegacyEncoding): Opened | null {
  if (sealed.length < 28) return null;
  for (const key of keys) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12), { authTagLength: 16 });
      decipher.setAuthTag(sealed.subarray(12, 28));
      const plaintext = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
      // TOTP secrets and hash keys were sealed as base64 text; they are sealed as bytes now.
      const bytes = encoding === 'base64' ? Buffer.from(plaintext.toString('utf8'), 'base64') : plaintext;
      return { plaintext: bytes, current: false };
    } catch {
      // Another secret of the list, or not this one's value.
    }
  }
  return null;
}
