/** A conversation's manual control: people, not the AI agent, answer; pinned, the agent does not take over. */
export interface ManualControlState {
  manual_control: boolean;
  manual_control_locked: boolean;
}

/** A change of manual control, named as its event (`manual_control_<transition>`). */
export type ManualControlTransition = 'activated' | 'locked' | 'unlocked' | 'released';

/**
 * The one rule of manual control, for the operator API and for sends (`bot_status`): a pin implies
 * manual control, and a release removes the pin. Answers the state asked for and its transitions,
 * in the order their events are written (none when nothing changes).
 */
export function manualControlChange(
  current: ManualControlState,
  wanted: { active?: boolean; locked?: boolean },
): { active: boolean; locked: boolean; transitions: ManualControlTransition[] } {
  const active = wanted.locked === true ? true : (wanted.active ?? current.manual_control);
  const locked = active ? (wanted.locked ?? current.manual_control_locked) : false;
  const transitions: ManualControlTransition[] = [];
  if (active && !current.manual_control) transitions.push('activated');
  if (locked && !current.manual_control_locked) transitions.push('locked');
  if (!locked && current.manual_control_locked) transitions.push('unlocked');
  if (!active && current.manual_control) transitions.push('released');
  return { active, locked, transitions };
}
