import type { Db } from '../../db/database.ts';
import { businessesRepository } from '../businesses/businesses.repository.ts';
import { aiTimersRepository } from './ai-timers.repository.ts';

/** What a run records when the budget stopped it before the model was called. */
export const BUDGET_EXHAUSTED = 'budget_exhausted';

/**
 * A business's daily token budget of its AI agents: its own (`businesses.ai_daily_token_budget`) or
 * the service's (AI_DAILY_TOKEN_BUDGET); 0 is no bound. Checked as a run starts (a reply, a
 * follow-up the model writes, a sentiment) against the tokens its model calls recorded this UTC day,
 * so a reply's tool rounds, and runs in flight at once, may pass it by what they use.
 */
export class TokenBudget {
  constructor(
    private readonly db: Db,
    private readonly defaultDaily: number,
  ) {}

  /** Whether the business has used its day's tokens: a model call now would go past its budget. */
  async exhausted(businessId: string): Promise<boolean> {
    const limit = (await businessesRepository.aiDailyTokenBudget(this.db, businessId)) ?? this.defaultDaily;
    if (limit === 0) return false;
    return (await aiTimersRepository.tokensToday(this.db, businessId)) >= limit;
  }
}
