import type { AiRunRow, RunState } from './ai-runs.repository.ts';

/**
 * Why a run acts no more (no reply, no tool), read from the conversation as it is now; null while
 * it may: the conversation open, no manual control, the run's agent, and no newer inbound message
 * (that one's run answers both).
 */
export function stopReason(
  state: RunState | undefined,
  run: AiRunRow,
): 'closed' | 'manual_control' | 'agent_changed' | 'superseded' | null {
  if (!state || state.closed_at !== null) return 'closed';
  if (state.manual_control) return 'manual_control';
  if (state.agent_id !== run.agent_id) return 'agent_changed';
  if (state.newest_inbound_id !== run.trigger_message_id) return 'superseded';
  return null;
}
