import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';

/** One answer of the scripted model: a text, or tool calls (the run executes them and asks again). */
const ScriptedAnswer = Type.Union([
  Type.Object({ text: Type.String() }, { additionalProperties: false }),
  Type.Object(
    {
      tool_calls: Type.Array(
        Type.Object(
          { name: Type.String(), arguments: Type.Record(Type.String(), Type.Unknown()) },
          {
            additionalProperties: false,
          },
        ),
        { minItems: 1, maxItems: 8 },
      ),
    },
    { additionalProperties: false },
  ),
]);

/** What the customer writes at once (answered together), and what the scripted model answers to it. */
const Turn = Type.Object(
  {
    customer: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { minItems: 1, maxItems: 10 }),
    /** The scripted model's answers to this turn, in order; a real model ignores them. */
    script: Type.Optional(Type.Array(ScriptedAnswer, { maxItems: 10 })),
    /** Whether the agent runs on this turn (false: under manual control, say); default true. */
    runs: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const EventType = Type.String({ pattern: '^[a-z_]+$' });

/**
 * A scripted customer conversation and what it must produce. Checks are on what a business sees:
 * the agent's replies on the channel, the exported events, the conversation's manual control and
 * each run's end, so the same case judges the scripted model and a real one.
 */
export const EvalCase = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    /** The agent: the operator API's create body (a name is given when absent). */
    agent: Type.Record(Type.String(), Type.Unknown()),
    /** The contact, as the operator API's contact create takes it, before the conversation starts. */
    contact: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    turns: Type.Array(Turn, { minItems: 1, maxItems: 10 }),
    expect: Type.Object(
      {
        /** The fewest and most replies the agent sends, hand-over messages included. */
        replies: Type.Optional(
          Type.Object(
            { min: Type.Optional(Type.Integer({ minimum: 0 })), max: Type.Optional(Type.Integer({ minimum: 0 })) },
            { additionalProperties: false },
          ),
        ),
        /** Exported event types that must be written, each at least once. */
        events: Type.Optional(Type.Array(EventType)),
        /** Exported event types that must not be written. */
        absent_events: Type.Optional(Type.Array(EventType)),
        /** Whether the conversation ends under manual control. */
        manual_control: Type.Optional(Type.Boolean()),
        /** How the last run ended (`replied`, `handed_over`, ...). */
        last_run: Type.Optional(Type.String()),
        /** The contact's fields after the conversation (subset). */
        contact: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type EvalCase = Static<typeof EvalCase>;
export type ScriptedAnswer = Static<typeof ScriptedAnswer>;

/** The cases of a directory (eval/cases by default), by file name; a malformed one stops the load. */
export async function loadCases(dir = join(import.meta.dirname, 'cases')): Promise<(EvalCase & { file: string })[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(
    files.map(async (file) => {
      const value: unknown = JSON.parse(await readFile(join(dir, file), 'utf8'));
      const errors = [...Value.Errors(EvalCase, value)].map((e) => `${e.instancePath || '/'} ${e.message}`);
      if (errors.length > 0) throw new Error(`eval/cases/${file}: ${errors.slice(0, 5).join('; ')}`);
      return { ...(value as EvalCase), file };
    }),
  );
}
