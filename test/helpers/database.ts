import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { connectDatabase, type Sql } from '../../src/storage/db.ts';
import { loadMigrations, migrate } from '../../src/storage/migrations.ts';

/** A fresh, empty database on the test server; dropped again by `drop()`. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.TEST_ADMIN_DATABASE_URL ?? process.env.DATABASE_URL;
  if (adminUrl === undefined) throw new Error('run the tests with `npm test` (it provides a database)');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** A fresh database with every migration, and the service's own handle on it; `drop()` ends both. */
export async function createMigratedDatabase(): Promise<{ sql: Sql; drop(): Promise<void> }> {
  const database = await createTestDatabase();
  const sql = connectDatabase(database.url);
  await migrate(sql, await loadMigrations());
  return { sql, drop: async () => (await sql.end(), await database.drop()) };
}
