import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
import { teamsRepository } from './teams.repository.ts';

/** Teams of a business; conversations can be assigned to one. */
export class TeamsService {
  constructor(private readonly db: Db) {}

  create(businessId: string, name: string) {
    return teamsRepository.insert(this.db, businessId, { id: newId(), name });
  }

  list(businessId: string, limit: number) {
    return teamsRepository.list(this.db, businessId, limit);
  }
}
