import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Linter, type Rule } from 'eslint';
import { sql } from 'kysely';
import tseslint from 'typescript-eslint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.ts';

// Each table is written by the module that owns it (docs/ARCHITECTURE.md#modules-and-their-tables):
// the lint rule of eslint.table-owners.js refuses the other writes. Here: the rule refuses what it
// must and lets the rest through, its map is the documented table, and every table of the migrated
// database has one owner.

const root = join(import.meta.dirname, '../..');
const { TABLE_OWNERS, tableOwners } = (await import(pathToFileURL(join(root, 'eslint.table-owners.js')).href)) as {
  TABLE_OWNERS: Record<string, string>;
  tableOwners: { rules: Record<string, Rule.RuleModule> };
};

const linter = new Linter({ configType: 'flat' });

/** The rule's messages for `code` as the file `filename` (relative to the checkout). */
function lint(filename: string, code: string): string[] {
  const config: Linter.Config[] = [
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      plugins: { 'table-owners': tableOwners },
      rules: { 'table-owners/writes-own-tables': 'error' },
    },
  ];
  return linter.verify(code, config, filename).map((m) => m.message);
}

describe('the lint rule writes-own-tables', () => {
  it("refuses a module's Kysely write of another module's table, naming its owner", () => {
    expect(lint('src/modules/sending/sending.accept.ts', `db.insertInto('messages').values(row).execute();`)).toEqual([
      "`messages` belongs to src/modules/messages: write it through that module's repository or service, not from src/modules/sending.",
    ]);
    expect(
      lint('src/modules/inbound/x.repository.ts', `db.updateTable('conversations as c').set({}).execute();`),
    ).toHaveLength(1);
    expect(lint('src/modules/media/media.repository.ts', `db.deleteFrom('outbox').execute();`)).toHaveLength(1);
  });

  it("refuses another module's table in SQL text: insert, update, delete, in a statement's parts too", () => {
    const code = `
      sql\`with inserted as (insert into messages (id) select 1 returning id),
        counted as (update conversations c set message_count = 1 where c.id = any(array(select id from inserted)))
        select 1\`;
      sql\`DELETE FROM events WHERE id = \${id}\`;
      sql.raw('update public."contacts" set x = 1');`;
    expect(lint('src/modules/import/import.repository.ts', code).map((m) => m.split(' ')[0])).toEqual([
      '`messages`',
      '`conversations`',
      '`events`',
      '`contacts`',
    ]);
  });

  it('lets a module write its own tables, and takes row locks and upserts for what they are', () => {
    const code = `
      db.insertInto('messages').values(row).execute();
      db.updateTable('messages as m').set({}).execute();
      sql\`update messages m set status = 'SENT' from v where m.id = v.id\`;
      sql\`select * from conversations c where c.id = \${id} for update\`;
      sql\`select 1 from conversations for no key update skip locked\`;
      sql\`insert into messages (id) values (1) on conflict (id) do update set id = excluded.id\`;
      sql\`select * from messages where updated_at > now()\`;`;
    expect(lint('src/modules/messages/messages.repository.ts', code)).toEqual([]);
    expect(lint('src/jobs/outbox.repository.ts', `db.updateTable('outbox').set({}).execute();`)).toEqual([]);
  });

  it('refuses a write whose table it cannot read, and a table without an owner', () => {
    expect(lint('src/modules/messages/m.repository.ts', `db.insertInto(table).values(row).execute();`)).toEqual([
      'Name the table a write reaches literally, so that its owner can be checked.',
    ]);
    expect(
      lint('src/modules/messages/m.repository.ts', 'sql`insert into ${sql.table(t)} (id) values (1)`;'),
    ).toHaveLength(1);
    expect(
      lint('src/modules/messages/m.repository.ts', `db.insertInto('message_drafts').values(row).execute();`),
    ).toEqual([
      '`message_drafts` has no owner in TABLE_OWNERS (eslint.table-owners.js): give it one, as docs/ARCHITECTURE.md does.',
    ]);
  });
});

/** The owner of each table as docs/ARCHITECTURE.md's section "Modules and their tables" states it. */
function documentedOwners(): Record<string, string> {
  const doc = readFileSync(join(root, 'docs/ARCHITECTURE.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Modules and their tables'), doc.indexOf('## Channels:'));
  const owners: Record<string, string> = {};
  const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
  for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
    const [modules, owns] = row.split('|').slice(1, 3).map(names);
    const tables = owns.filter((name) => /^[a-z_]+$/.test(name));
    if (tables.length > 0 && modules.length !== 1) throw new Error(`one module per row that owns tables: ${row}`);
    for (const table of tables) owners[table] = `modules/${modules[0]}`;
  }
  const outside = section.slice(section.indexOf('Outside the modules'));
  for (const [, folder, table] of outside.matchAll(/`src\/([a-z-]+)\/[^`]*` owns `([a-z_]+)`/g)) owners[table] = folder;
  return owners;
}

describe('the owners', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({}, { workers: false });
  });
  afterAll(() => t.close());

  it('are those docs/ARCHITECTURE.md names, each folder a module of src/modules (or src/jobs, src/http)', () => {
    expect(documentedOwners()).toEqual(TABLE_OWNERS);
    for (const folder of new Set(Object.values(TABLE_OWNERS)))
      expect(statSync(join(root, 'src', folder)).isDirectory()).toBe(true);
  });

  it('cover every table of the migrated database, once', async () => {
    const { rows } = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like 'kysely\\_%'`.execute(
      t.database.db,
    );
    expect(rows.map((r) => r.table_name).sort()).toEqual(Object.keys(TABLE_OWNERS).sort());
  });
});
