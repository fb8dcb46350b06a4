import type { Db } from '../../db/database.ts';
import { notFound } from '../../http/errors.ts';
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

  isEmpty() {
    return businessesRepository.isEmpty(this.db);
  }

  list(limit = 100) {
    return businessesRepository.list(this.db, limit);
  }
}
