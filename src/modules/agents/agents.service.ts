import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
import { agentsRepository } from './agents.repository.ts';

/** AI agents of a business (so far: created by the operator, assigned to conversations by sends). */
export class AgentsService {
  constructor(private readonly db: Db) {}

  create(businessId: string, input: { name: string; type?: string; config?: Record<string, unknown> }) {
    return agentsRepository.insert(this.db, businessId, { id: newId(), name: input.name, type: input.type ?? 'basic', config: input.config ?? {} });
  }
}
