import { sql, type Kysely } from 'kysely';

/**
 * Where a table without business_id as its distribution column stands once the schema is distributed
 * (docs/SCALING.md#the-citus-plan): copied to every node, or kept on the coordinator only.
 */
export interface Placement {
  place: 'reference' | 'coordinator';
  reason: string;
}

interface TableRow {
  name: string;
  business_id: number | null;
}

interface UniqueRow {
  table: string;
  index: string;
  primary: boolean;
  first: number;
}

interface ForeignKeyRow {
  name: string;
  table: string;
  referenced: string;
  columns: number[];
  referenced_columns: number[];
}

/**
 * What keeps the tables of `schema` from being distributed by business_id, one line per breach, read
 * from pg_catalog: every table not in `placed` (a tenant table) has a business_id column, a primary
 * key, and business_id first in every unique index (its primary key and unique constraints too);
 * every foreign key of a tenant table to another pairs business_id with business_id, and one to a
 * placed table points at a reference table (the only kind a distributed table may reference). Each
 * placed table must exist, so the list stays true.
 */
export async function distributionBreaches(db: Kysely<any>, schema: string, placed: Record<string, Placement>) {
  const breaches: string[] = [];
  const { rows: tables } = await sql<TableRow>`select c.relname as name,
      (select a.attnum from pg_attribute a
       where a.attrelid = c.oid and a.attname = 'business_id' and not a.attisdropped) as business_id
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relkind in ('r', 'p') and not c.relispartition
    order by c.relname`.execute(db);
  const businessIdOf = new Map(tables.map((t) => [t.name, t.business_id]));
  const isTenant = (table: string) => !(table in placed);

  for (const name of Object.keys(placed))
    if (!businessIdOf.has(name)) breaches.push(`${name} is listed as ${placed[name].place} but does not exist`);
  for (const table of tables)
    if (isTenant(table.name) && table.business_id === null)
      breaches.push(`${table.name} has no business_id and is not listed as a reference or coordinator table`);

  const { rows: uniques } = await sql<UniqueRow>`select c.relname as table, i.relname as index,
      x.indisprimary as primary, x.indkey[0] as first
    from pg_index x join pg_class c on c.oid = x.indrelid join pg_class i on i.oid = x.indexrelid
      join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and x.indisunique
    order by c.relname, i.relname`.execute(db);
  const withPrimaryKey = new Set(uniques.filter((u) => u.primary).map((u) => u.table));
  for (const table of tables) {
    if (isTenant(table.name) && table.business_id !== null && !withPrimaryKey.has(table.name))
      breaches.push(`${table.name} has no primary key`);
  }
  for (const unique of uniques) {
    const businessId = businessIdOf.get(unique.table);
    if (!isTenant(unique.table) || businessId === null || businessId === undefined) continue;
    if (Number(unique.first) !== businessId)
      breaches.push(`${unique.table}: unique index ${unique.index} does not lead with business_id`);
  }

  const { rows: foreignKeys } = await sql<ForeignKeyRow>`select k.conname as name, r.relname as table,
      f.relname as referenced, k.conkey as columns, k.confkey as referenced_columns
    from pg_constraint k join pg_class r on r.oid = k.conrelid join pg_class f on f.oid = k.confrelid
      join pg_namespace n on n.oid = r.relnamespace
    where n.nspname = ${schema} and k.contype = 'f'
    order by r.relname, k.conname`.execute(db);
  for (const key of foreignKeys) {
    if (!isTenant(key.table)) continue;
    if (!isTenant(key.referenced)) {
      if (placed[key.referenced].place !== 'reference')
        breaches.push(
          `${key.table}: foreign key ${key.name} references ${key.referenced}, which is not a reference table`,
        );
      continue;
    }
    const pairs = key.columns.map((column, i) => [Number(column), Number(key.referenced_columns[i])]);
    const [own, theirs] = [businessIdOf.get(key.table), businessIdOf.get(key.referenced)];
    if (!pairs.some(([column, referenced]) => column === own && referenced === theirs))
      breaches.push(
        `${key.table}: foreign key ${key.name} to ${key.referenced} does not pair business_id with business_id`,
      );
  }
  return breaches;
}
