import type { Static } from 'typebox';
import { notFound } from '../../lib/domain-errors.ts';
import { conversationOpsRepository } from '../conversations/conversation-ops.repository.ts';
import { AiRunJobHandler, type AiRunDeps } from './ai-run.job.ts';
import { aiRunsRepository, type AiRunRow } from './ai-runs.repository.ts';
import type { AiRun, AiRunsPage } from './ai-runs.schemas.ts';

/** The AI agent's runs: the job that runs them, and their records as the operator API and the dashboard read them. */
export class AiRunsService {
  constructor(private readonly deps: Omit<AiRunDeps, 'log'>) {}

  /** The worker side: runs the agents' `ai_run` jobs (register it on the outbox worker). */
  runJobHandler(log: AiRunDeps['log']): AiRunJobHandler {
    return new AiRunJobHandler({ ...this.deps, log });
  }

  /** A conversation's runs, newest first; 404 for a conversation the business does not have. */
  async list(
    businessId: string,
    conversationId: string,
    page: { limit?: number; before?: string },
  ): Promise<Static<typeof AiRunsPage>> {
    if (!(await conversationOpsRepository.get(this.deps.db, businessId, conversationId)))
      throw notFound('conversation');
    const limit = page.limit ?? 20;
    const rows = await aiRunsRepository.list(this.deps.db, businessId, conversationId, {
      limit: limit + 1,
      before: page.before,
    });
    const runs = rows.slice(0, limit).map(toRun);
    return { runs, next_before: rows.length > limit ? runs[runs.length - 1].id : null };
  }
}

function toRun(row: AiRunRow): Static<typeof AiRun> {
  return {
    id: row.id,
    conversation_id: row.conversation_id,
    agent_id: row.agent_id,
    kind: row.kind,
    trigger_message_id: row.trigger_message_id,
    input_message_ids: row.input_message_ids,
    status: row.status,
    outcome: row.outcome,
    model_calls: row.model_calls as Static<typeof AiRun>['model_calls'],
    tool_calls: row.tool_calls as Static<typeof AiRun>['tool_calls'],
    reply_text: row.reply_text,
    reply_message_id: row.reply_message_id,
    bot_status: row.bot_status as Static<typeof AiRun>['bot_status'],
    attempts: row.attempts,
    error: row.error,
    created_at: row.created_at,
    finished_at: row.finished_at,
  };
}
