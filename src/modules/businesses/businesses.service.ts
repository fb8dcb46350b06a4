import type { Db } from '../../db/database.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { businessesRepository } from './businesses.repository.ts';

export class BusinessesService {
  constructor(private readonly db: Db) {}

  create(name: string) {
    return businessesRepository.insert(this.db, { id: newId(), name });
  }

  async get(id: string) {
    const business = await businessesRepository.find(this.db, id);
    if (!business) throw notFound('business');
    return business;
  }

  /** Changes the business's name or settings (what the body sends); 404 for an unknown business. */
  async update(id: string, changes: { name?: string; ai_daily_token_budget?: number | null; time_zone?: string }) {
    // The reports hand the zone to PostgreSQL's AT TIME ZONE, so PostgreSQL's own list decides.
    if (changes.time_zone !== undefined && !(await businessesRepository.knowsTimeZone(this.db, changes.time_zone)))
      throw invalid(`unknown time zone ${JSON.stringify(changes.time_zone)}: use an IANA name such as Europe/Paris`, [
        { location: 'body', path: '/time_zone', message: 'not a time zone PostgreSQL knows' },
      ]);
    const business = await businessesRepository.update(this.db, id, changes);
    if (!business) throw notFound('business');
    return business;
  }

  isEmpty() {
    return businessesRepository.isEmpty(this.db);
  }

  /** A page of businesses, oldest first, and the `after` of the next page (null on the last). */
  async list(page: { limit: number; after?: string; name?: string }) {
    const rows = await businessesRepository.list(this.db, { ...page, limit: page.limit + 1 });
    const more = rows.length > page.limit;
    const businesses = more ? rows.slice(0, page.limit) : rows;
    return { businesses, next_after: more ? businesses[businesses.length - 1].id : null };
  }
}
