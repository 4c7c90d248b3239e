import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { connectDatabase, type Sql } from '../../src/storage/db.ts';
import { isSchemaCurrent, loadMigrations, migrate, MigrationError, type Migration } from '../../src/storage/migrations.ts';
import { createTestDatabase } from '../helpers/database.ts';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let sql: Sql;
let migrations: Migration[];
before(async () => {
  database = await createTestDatabase();
  sql = connectDatabase(database.url);
  migrations = await loadMigrations();
});
after(async () => {
  await sql.end();
  await database.drop();
});

describe('migrations', () => {
  it('load the numbered files of sql/ in order', () => {
    assert.ok(migrations.length >= 1);
    assert.deepEqual(migrations.map((migration) => migration.version), [...migrations.map((migration) => migration.version)].sort((a, b) => a - b));
    assert.equal(migrations[0]!.version, 1);
    assert.match(migrations[0]!.checksum, /^[0-9a-f]{64}$/);
  });

  it('apply once, even when several instances start together', async () => {
    assert.equal(await isSchemaCurrent(sql, migrations).catch(() => false), false);
    const others = [connectDatabase(database.url), connectDatabase(database.url), connectDatabase(database.url)];
    const results = await Promise.all(others.map((other) => migrate(other, migrations)));
    await Promise.all(others.map((other) => other.end()));
    assert.equal(results.flat().length, migrations.length, 'each file applied by exactly one instance');
    assert.deepEqual(await migrate(sql, migrations), []);
    const rows = await sql`SELECT version, checksum FROM schema_migrations ORDER BY version`;
    assert.deepEqual(rows.map((row) => row.version), migrations.map((migration) => migration.version));
    assert.equal(await isSchemaCurrent(sql, migrations), true);
  });

  it('stop on an applied file whose text changed', async () => {
    const changed = migrations.map((migration, index) => (index === 0 ? { ...migration, checksum: '0'.repeat(64) } : migration));
    await assert.rejects(migrate(sql, changed), (error: Error) => error instanceof MigrationError && /001_.*was changed after it was applied/.test(error.message));
  });

  it('accept the earlier texts of the files rewritten for a reader (011, 012), and no other text', async () => {
    await migrate(sql, migrations);
    const earlier = { 11: '0d7fe1fd64281cd3f21a601e759c0363ff57e98dea133adbe9b1d6e44313c109', 12: '0ab36ad31425fc2252e0ecfec21aaf87a9672334526464813999565cdb964d8b' };
    const current = await sql`SELECT version, checksum FROM schema_migrations WHERE version IN (11, 12) ORDER BY version`;
    try {
      for (const [version, checksum] of Object.entries(earlier)) await sql`UPDATE schema_migrations SET checksum = ${checksum} WHERE version = ${Number(version)}`;
      assert.deepEqual(await migrate(sql, migrations), [], 'a database that applied the earlier texts');
      await sql`UPDATE schema_migrations SET checksum = ${'1'.repeat(64)} WHERE version = 11`;
      await assert.rejects(migrate(sql, migrations), /migration 011_second_factors\.sql was changed after it was applied/);
    } finally {
      for (const row of current) await sql`UPDATE schema_migrations SET checksum = ${row.checksum} WHERE version = ${row.version}`;
    }
  });

  it('stop on a database newer than the build', async () => {
    await assert.rejects(migrate(sql, migrations.slice(0, 0)), (error: Error) => error instanceof MigrationError && /does not know/.test(error.message));
    assert.equal(await isSchemaCurrent(sql, [...migrations, { ...migrations[0]!, version: 999 }]), false);
  });

  it('roll back a failing file completely', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sql-'));
    await writeFile(join(dir, '900_good.sql'), 'CREATE TABLE applied_then_rolled_back (id int);');
    await writeFile(join(dir, '901_bad.sql'), 'CREATE TABLE broken (id int); SELECT * FROM no_such_table;');
    await writeFile(join(dir, 'notes.txt'), 'ignored');
    const extra = await loadMigrations(pathToFileURL(`${dir}/`));
    assert.deepEqual(extra.map((migration) => migration.name), ['900_good.sql', '901_bad.sql']);
    await assert.rejects(migrate(sql, [...migrations, ...extra]));
    const [row] = await sql`SELECT to_regclass('applied_then_rolled_back') AS present`;
    assert.equal(row!.present, null);
    await rm(dir, { recursive: true });
  });
});
