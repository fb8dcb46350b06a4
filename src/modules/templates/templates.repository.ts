import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { TemplatesTable } from '../../db/types.ts';

export type TemplateRow = Selectable<TemplatesTable>;

export const templatesRepository = {
  insert(db: Db, businessId: string, row: Omit<Insertable<TemplatesTable>, 'business_id'>): Promise<TemplateRow> {
    return db
      .insertInto('templates')
      .values({ ...row, business_id: businessId })
      .returningAll()
      .executeTakeFirstOrThrow();
  },

  find(db: Db, businessId: string, id: string): Promise<TemplateRow | undefined> {
    return db
      .selectFrom('templates')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  list(db: Db, businessId: string, limit: number): Promise<TemplateRow[]> {
    return db
      .selectFrom('templates')
      .selectAll()
      .where('business_id', '=', businessId)
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  update(
    db: Db,
    businessId: string,
    id: string,
    values: Omit<Insertable<TemplatesTable>, 'business_id' | 'id'>,
  ): Promise<TemplateRow | undefined> {
    return db
      .updateTable('templates')
      .set(values)
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
  },

  async delete(db: Db, businessId: string, id: string): Promise<boolean> {
    const result = await db
      .deleteFrom('templates')
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  },

  async channelExists(db: Db, businessId: string, channelId: string): Promise<boolean> {
    const row = await db
      .selectFrom('channels')
      .select('id')
      .where('business_id', '=', businessId)
      .where('id', '=', channelId)
      .executeTakeFirst();
    return row !== undefined;
  },
};
