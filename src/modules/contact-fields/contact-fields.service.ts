import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { conflict } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { contactFieldsRepository } from './contact-fields.repository.ts';

/** Custom contact field definitions: the keys GET /conversations can search by (field_key). */
export class ContactFieldsService {
  constructor(private readonly db: Db) {}

  async create(businessId: string, input: { key: string; name: string }) {
    try {
      return await contactFieldsRepository.insert(this.db, businessId, {
        id: newId(),
        key: input.key,
        name: input.name,
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`contact field "${input.key}" already exists`, [{ field: 'key' }]);
      throw err;
    }
  }

  findByKey(businessId: string, key: string) {
    return contactFieldsRepository.findByKey(this.db, businessId, key);
  }

  list(businessId: string, limit: number) {
    return contactFieldsRepository.list(this.db, businessId, limit);
  }
}
