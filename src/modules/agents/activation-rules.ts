import { Type, type Static } from 'typebox';
import { OneOf } from '../../http/common.schemas.ts';
import { invalid } from '../../lib/domain-errors.ts';

/** Weekdays as opening hours name them, Monday first. */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
type Weekday = (typeof WEEKDAYS)[number];

/** Wait after an inbound message before the agent answers, when the rules name none. */
export const DEFAULT_DEBOUNCE_SECONDS = 3;

const ClockTime = Type.String({
  pattern: '^(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]|24:00)$',
  description: 'HH:MM, 00:00 to 24:00',
});
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100, uniqueItems: true });

const OpeningWindow = Type.Object(
  {
    days: Type.Array(OneOf(WEEKDAYS), {
      minItems: 1,
      maxItems: 7,
      uniqueItems: true,
      description: 'mon, tue, wed, thu, fri, sat, sun',
    }),
    from: ClockTime,
    to: {
      ...ClockTime,
      description: 'HH:MM, after `from`; earlier than `from` runs past midnight into the next day',
    },
  },
  { additionalProperties: false },
);

/**
 * What an agent's `activation_rules` may hold; every key optional, since a partial update merges
 * into what is stored (checkActivationRules then checks the whole).
 */
export const ActivationRulesInput = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'false: the agent answers no message; default true' })),
    channels: Type.Optional(
      Type.Array(Type.String({ format: 'uuid' }), {
        maxItems: 100,
        uniqueItems: true,
        description: 'ids of the channels the agent answers on (channels of the business); empty or absent: all',
      }),
    ),
    contact_tags: Type.Optional(
      Type.Object(
        {
          any: Type.Optional({ ...Tags, description: 'answer only contacts with at least one of these tags' }),
          none: Type.Optional({ ...Tags, description: 'answer no contact with any of these tags' }),
        },
        { additionalProperties: false },
      ),
    ),
    opening_hours: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean({ description: 'false: answer at any hour; default true' })),
          time_zone: Type.Optional(
            Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, e.g. Europe/Madrid' }),
          ),
          windows: Type.Optional(
            Type.Array(OpeningWindow, { maxItems: 50, description: 'when the agent answers, in time_zone' }),
          ),
        },
        { additionalProperties: false, description: 'the agent answers only within these weekly windows' },
      ),
    ),
    debounce_seconds: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 60,
        description: `wait this long after an inbound message for more before answering them together; default ${DEFAULT_DEBOUNCE_SECONDS}`,
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'when the agent answers an inbound message: enabled, channels, contact_tags {any, none}, opening_hours ' +
      '{time_zone, windows [{days, from, to}]}, debounce_seconds. Absent rules do not restrict.',
  },
);
export type ActivationRules = Static<typeof ActivationRulesInput>;

/**
 * The weekday-and-time format of each known time zone met, or null for a zone this runtime does not
 * know: a format is costly to build and every inbound message of an agent with opening hours reads
 * one. Only known zones are kept, so the map is bounded by the runtime's list whatever is sent.
 */
const zoneFormats = new Map<string, Intl.DateTimeFormat>();

function zoneFormat(zone: string): Intl.DateTimeFormat | null {
  const kept = zoneFormats.get(zone);
  if (kept) return kept;
  try {
    const format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    zoneFormats.set(zone, format);
    return format;
  } catch {
    return null;
  }
}

/** Whether `zone` names a time zone this runtime knows (IANA names and their aliases). */
const knownTimeZone = (zone: string): boolean => zoneFormat(zone) !== null;

/**
 * The rules as stored after a create or a merge: opening hours that are on need a known time zone
 * and at least one window, and a window never starts and ends at the same time. `bodyPath` is where
 * the rules sit in the request's body, so that a refusal's details point where the schema's would.
 */
export function checkActivationRules(rules: ActivationRules, bodyPath: string): void {
  const hours = rules.opening_hours;
  if (!hours || hours.enabled === false) return;
  const at = (path: string, message: string) =>
    invalid(`activation_rules.opening_hours${path.replaceAll('/', '.')}: ${message}`, [
      { location: 'body', path: `${bodyPath}/opening_hours${path}`, message },
    ]);
  if (hours.time_zone === undefined) throw at('/time_zone', 'required');
  if (!knownTimeZone(hours.time_zone)) throw at('/time_zone', 'not an IANA time zone');
  if (!hours.windows || hours.windows.length === 0) throw at('/windows', 'at least one window');
  hours.windows.forEach((w, i) => {
    if (w.from === w.to) throw at(`/windows/${i}`, 'from and to are the same time');
  });
}

/** Why an agent does not answer a message, or null when it does. */
export type Refusal = 'disabled' | 'channel' | 'contact_tags' | 'opening_hours' | null;

const minutes = (clock: string) => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3));

/** The weekday and minute of the day at `now` in `zone`. */
function localTime(now: number, zone: string): { day: Weekday; minute: number } {
  const parts = zoneFormat(zone)!.formatToParts(new Date(now));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return {
    day: part('weekday').toLowerCase().slice(0, 3) as Weekday,
    minute: Number(part('hour')) * 60 + Number(part('minute')),
  };
}

function withinHours(hours: NonNullable<ActivationRules['opening_hours']>, now: number): boolean {
  if (hours.enabled === false || !hours.time_zone || !knownTimeZone(hours.time_zone)) return true;
  const { day, minute } = localTime(now, hours.time_zone);
  const yesterday = WEEKDAYS[(WEEKDAYS.indexOf(day) + 6) % 7];
  return (hours.windows ?? []).some((w) => {
    const from = minutes(w.from);
    const to = minutes(w.to);
    if (from < to) return w.days.includes(day) && minute >= from && minute < to;
    // Past midnight: the evening of one of its days, or the early hours after one.
    return (w.days.includes(day) && minute >= from) || (w.days.includes(yesterday) && minute < to);
  });
}

/**
 * Whether the agent answers a message on `channelId` from a contact with `tags` at `now`, by its
 * activation rules (stored ones of an older, free-form shape are read for the keys they share).
 */
export function activationRefusal(
  stored: Record<string, unknown>,
  message: { channelId: string | null; tags: readonly string[]; now: number },
): Refusal {
  const rules = stored as ActivationRules;
  if (rules.enabled === false) return 'disabled';
  if (Array.isArray(rules.channels) && rules.channels.length > 0) {
    if (message.channelId === null || !rules.channels.includes(message.channelId)) return 'channel';
  }
  const any = rules.contact_tags?.any ?? [];
  if (Array.isArray(any) && any.length > 0 && !any.some((t) => message.tags.includes(t))) return 'contact_tags';
  const none = rules.contact_tags?.none ?? [];
  if (Array.isArray(none) && none.some((t) => message.tags.includes(t))) return 'contact_tags';
  if (rules.opening_hours && !withinHours(rules.opening_hours, message.now)) return 'opening_hours';
  return null;
}

/** The wait before answering, in seconds (the rules' debounce_seconds, else the default). */
export function debounceSeconds(stored: Record<string, unknown>): number {
  const value = (stored as ActivationRules).debounce_seconds;
  return typeof value === 'number' && value >= 0 && value <= 60 ? value : DEFAULT_DEBOUNCE_SECONDS;
}
