import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { OneOf } from '../../http/common.schemas.ts';
import { invalid } from '../../lib/domain-errors.ts';

/** The longest wait a timer setting names: 30 days, in minutes. */
const MAX_MINUTES = 43_200;

const Minutes = (description: string, minimum: 'zero' | 'positive' = 'positive') =>
  Type.Number({
    ...(minimum === 'zero' ? { minimum: 0 } : { exclusiveMinimum: 0 }),
    maximum: MAX_MINUTES,
    description: `${description}; minutes, fractions allowed, at most ${MAX_MINUTES}`,
  });

/**
 * An agent's `follow_up_settings`: after the agent's last message, a customer silent this long gets
 * a follow-up, up to `max_follow_ups` per silence. Every key optional: a partial update merges
 * into what is stored, and the whole is checked again (checkTimerSettings).
 */
export const FollowUpSettingsInput = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'true: follow-ups are sent; default false' })),
    after_minutes: Type.Optional(
      Minutes("the customer's silence after the agent's last message before a follow-up; default 60"),
    ),
    max_follow_ups: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10,
        description: 'follow-ups per silence (a message from the customer starts a new one); default 1',
      }),
    ),
    message: Type.Optional(
      Type.String({
        maxLength: 4096,
        description: 'the follow-up, sent as it is; empty or absent: the model writes one from the conversation',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "follow-ups after the customer's silence: enabled, after_minutes, max_follow_ups, message. Sent as the agent, never under manual control, after the conversation closed or when its agent changed.",
  },
);

/**
 * An agent's `inactivity_run_settings`: what happens to a conversation without messages for
 * `after_minutes`, and when manual control returns to the agent on its own.
 */
export const InactivityRunSettingsInput = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({
        description: 'true: a conversation quiet for after_minutes is resolved or archived; default false',
      }),
    ),
    after_minutes: Type.Optional(Minutes('time without any message before the action; default 1440 (a day)')),
    action: Type.Optional(
      OneOf(['resolve', 'archive'] as const, {
        description: 'resolve (conversation_resolved) or archive (conversation_archived, closed); default resolve',
      }),
    ),
    manual_control_release_minutes: Type.Optional(
      Minutes(
        'manual control (by a person or a hand-over) returns to the agent this long after it was turned on or unpinned, unless pinned (manual_control_released, reason timer); 0 or absent: only by hand',
        'zero',
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'a quiet conversation: enabled, after_minutes, action (resolve or archive); and manual_control_release_minutes, when manual control returns to the agent on its own',
  },
);

export type FollowUpSettings = Static<typeof FollowUpSettingsInput>;
export type InactivityRunSettings = Static<typeof InactivityRunSettingsInput>;

/**
 * The settings as they will be stored after a create or a merge: the schema again, since settings
 * stored before it was enforced may hold anything.
 */
export function checkTimerSettings(
  field: 'follow_up_settings' | 'inactivity_run_settings',
  value: Record<string, unknown>,
): void {
  const schema: TSchema = field === 'follow_up_settings' ? FollowUpSettingsInput : InactivityRunSettingsInput;
  const error = Value.Errors(schema, value)[0];
  if (error)
    throw invalid(`${field} would not be valid: ${error.message}`, [
      { location: 'body', path: `/agent/${field}${error.instancePath}`, message: error.message },
    ]);
}

/** What the follow-up job reads, defaults applied; settings stored before their schema, and invalid, count as none. */
export function followUpSettings(raw: Record<string, unknown>) {
  const settings: FollowUpSettings = Value.Check(FollowUpSettingsInput, raw) ? raw : {};
  return {
    enabled: settings.enabled === true,
    afterSeconds: (settings.after_minutes ?? 60) * 60,
    maxFollowUps: settings.max_follow_ups ?? 1,
    message: settings.message?.trim() || undefined,
  };
}

/** What the inactivity and manual-control jobs read, defaults applied; invalid settings count as none. */
export function inactivitySettings(raw: Record<string, unknown>) {
  const settings: InactivityRunSettings = Value.Check(InactivityRunSettingsInput, raw) ? raw : {};
  const release = settings.manual_control_release_minutes ?? 0;
  return {
    enabled: settings.enabled === true,
    afterSeconds: (settings.after_minutes ?? 1440) * 60,
    action: settings.action ?? 'resolve',
    /** Null: manual control stays until released by hand. */
    releaseAfterSeconds: release > 0 ? release * 60 : null,
  };
}
