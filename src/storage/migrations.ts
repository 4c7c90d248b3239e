import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { Sql } from './db.ts';

export type Migration = { version: number; name: string; text: string; checksum: string };

/** The SQL files ship beside `src/` and `dist/` alike. */
export const migrationsDir = new URL('../../sql/', import.meta.url);
const fileName = /^([0-9]{3})_[a-z0-9_]+\.sql$/;
// Any constant works; it only has to be the same for every instance of the service.
const lockKey = 0x61636373; // "accs"

export class MigrationError extends Error {
  override name = 'MigrationError';
}

export async function loadMigrations(dir: URL = migrationsDir): Promise<Migration[]> {
  const names = (await readdir(dir)).filter((name) => fileName.test(name)).sort();
  return Promise.all(
    names.map(async (name) => {
      const text = await readFile(new URL(name, dir), 'utf8');
      const checksum = createHash('sha256').update(text).digest('hex');
      return { version: Number(name.slice(0, 3)), name, text, checksum };
    }),
  );
}

/**
 * Files rewritten after release, for a reader, to make exactly the same schema (test/schema.test.ts
 * compares the snapshot): the checksums of their earlier texts, which a database that applied
 * them holds. Nothing else may change an applied file.
 */
const rewritten: Record<number, string[]> = {
  11: ['0d7fe1fd64281cd3f21a601e759c0363ff57e98dea133adbe9b1d6e44313c109'],
  12: ['0ab36ad31425fc2252e0ecfec21aaf87a9672334526464813999565cdb964d8b'],
};

/**
 * Applies the migrations not yet applied, all in one transaction under an advisory lock,
 * so that instances starting together apply each file once. An applied file whose text
 * changed, or a database newer than this build, stops start-up.
 */
export async function migrate(sql: Sql, migrations: Migration[]): Promise<string[]> {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${lockKey})`;
    await tx`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version    integer PRIMARY KEY,
        name       text NOT NULL,
        checksum   text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`;
    const rows = await tx`SELECT version, name, checksum FROM schema_migrations`;
    const applied = new Map(rows.map((row) => [row.version as number, row]));
    const known = new Set(migrations.map((migration) => migration.version));
    for (const version of applied.keys()) {
      if (!known.has(version)) {
        const advice = 'run a newer build';
        throw new MigrationError(`the database has migration ${version}, which this build does not know; ${advice}`);
      }
    }
    const done: string[] = [];
    for (const migration of migrations) {
      const row = applied.get(migration.version);
      if (row !== undefined) {
        const accepted = [migration.checksum, ...(rewritten[migration.version] ?? [])];
        if (!accepted.includes(row.checksum)) {
          const problem = `migration ${migration.name} was changed after it was applied (checksum mismatch)`;
          throw new MigrationError(`${problem}; restore the file`);
        }
        continue;
      }
      await tx.unsafe(migration.text);
      const { version, name, checksum } = migration;
      await tx`INSERT INTO schema_migrations (version, name, checksum) VALUES (${version}, ${name}, ${checksum})`;
      done.push(migration.name);
    }
    return done;
  });
}

/** True when the database answers and holds every migration of this build. */
export async function isSchemaCurrent(sql: Sql, migrations: Migration[]): Promise<boolean> {
  const latest = Math.max(0, ...migrations.map((migration) => migration.version));
  const [row] = await sql`SELECT coalesce(max(version), 0) AS version FROM schema_migrations`;
  return row?.version === latest;
}
