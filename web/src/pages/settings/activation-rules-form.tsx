// An AI agent's activation rules (when it answers an inbound message), edited as a form and saved
// through the agent's PATCH, which merges them into the stored rules. The service checks them (a known
// time zone, a window that is not empty, channels of the business) and its refusal is shown here, with
// the fields it names marked.
import { useId, useState, type FormEvent } from 'react';
import { api, errorDetails, errorMessage, type ErrorDetail } from '../../api/client';
import type { paths } from '../../api/schema';
import { useLoad } from '../../api/use-load';
import { ErrorNote } from '../../shell/error-note';
import { Field, SettingsSection } from './settings-kit';
import styles from './settings.module.css';

type Agent = paths['/dashboard/api/agents/{id}']['get']['responses'][200]['content']['application/json']['agent'];
type Rules = NonNullable<
  NonNullable<
    paths['/dashboard/api/agents/{id}']['patch']['requestBody']
  >['content']['application/json']['agent']['activation_rules']
>;
type Hours = NonNullable<Rules['opening_hours']>;
type Weekday = NonNullable<Hours['windows']>[number]['days'][number];

const WEEKDAYS: [Weekday, string][] = [
  ['mon', 'Mon'],
  ['tue', 'Tue'],
  ['wed', 'Wed'],
  ['thu', 'Thu'],
  ['fri', 'Fri'],
  ['sat', 'Sat'],
  ['sun', 'Sun'],
];
const CLOCK = '(?:[01][0-9]|2[0-3]):[0-5][0-9]|24:00';

interface OpeningWindow {
  /** A key for the list only. */
  key: number;
  days: Weekday[];
  from: string;
  to: string;
}

/** The form's values: tags as the text typed, the debounce as typed ('' for the default). */
interface Draft {
  enabled: boolean;
  channels: string[];
  any: string;
  none: string;
  hours: boolean;
  timeZone: string;
  windows: OpeningWindow[];
  debounce: string;
}

let windowKeys = 0;
const newWindow = (days: Weekday[], from: string, to: string): OpeningWindow => ({
  key: ++windowKeys,
  days,
  from,
  to,
});

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const strings = (value: unknown) =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
const tagList = (text: string) => [
  ...new Set(
    text
      .split(',')
      .map((tag) => tag.trim())
      .filter(Boolean),
  ),
];

/** The form's values from the stored rules, read key by key: rules stored in an older shape still open. */
function draftOf(stored: Record<string, unknown>): Draft {
  const tags = isObject(stored.contact_tags) ? stored.contact_tags : {};
  const hours = isObject(stored.opening_hours) ? stored.opening_hours : undefined;
  const windows = (Array.isArray(hours?.windows) ? hours.windows : []).filter(isObject).map((w) =>
    newWindow(
      strings(w.days).filter((day): day is Weekday => WEEKDAYS.some(([value]) => value === day)),
      typeof w.from === 'string' ? w.from : '',
      typeof w.to === 'string' ? w.to : '',
    ),
  );
  return {
    enabled: stored.enabled !== false,
    channels: strings(stored.channels),
    any: strings(tags.any).join(', '),
    none: strings(tags.none).join(', '),
    hours: hours !== undefined && hours.enabled !== false,
    timeZone: typeof hours?.time_zone === 'string' ? hours.time_zone : Intl.DateTimeFormat().resolvedOptions().timeZone,
    windows,
    debounce: typeof stored.debounce_seconds === 'number' ? String(stored.debounce_seconds) : '',
  };
}

/**
 * The rules to send. Every key the form shows is sent whole (arrays replace what is stored); opening
 * hours turned off are sent as `enabled: false`, since a merge cannot remove them, and a debounce left
 * empty is not sent, keeping what is stored. `channels` is left out until the business's channels are
 * read, so that a failed read never clears them; a channel no longer the business's is dropped.
 */
function rulesOf(draft: Draft, hadHours: boolean, channels: { id: string }[] | undefined): Rules {
  const rules: Rules = {
    enabled: draft.enabled,
    contact_tags: { any: tagList(draft.any), none: tagList(draft.none) },
  };
  if (channels) rules.channels = draft.channels.filter((id) => channels.some((channel) => channel.id === id));
  if (draft.hours)
    rules.opening_hours = {
      enabled: true,
      time_zone: draft.timeZone.trim(),
      windows: draft.windows.map(({ days, from, to }) => ({
        days: WEEKDAYS.map(([day]) => day).filter((day) => days.includes(day)),
        from,
        to,
      })),
    };
  else if (hadHours) rules.opening_hours = { enabled: false };
  if (draft.debounce.trim() !== '') rules.debounce_seconds = Number(draft.debounce);
  return rules;
}

/** Where a refusal points inside the rules ('/opening_hours/time_zone'), whichever body held them. */
const rulePath = (detail: ErrorDetail) => detail.path.replace(/^(?:\/agent)?\/activation_rules/, '');

/** A refused field's name as the form labels it. */
function fieldName(path: string): string {
  const window = /^\/opening_hours\/windows\/(\d+)(?:\/(days|from|to))?/.exec(path);
  if (window) return `Window ${Number(window[1]) + 1}${window[2] ? ` ${window[2]}` : ''}`;
  const names: [string, string][] = [
    ['/enabled', 'Answers messages'],
    ['/channels', 'Channels'],
    ['/contact_tags/any', 'Only contacts with a tag'],
    ['/contact_tags/none', 'No contact with a tag'],
    ['/contact_tags', 'Contact tags'],
    ['/opening_hours/time_zone', 'Time zone'],
    ['/opening_hours/windows', 'Opening hours'],
    ['/opening_hours', 'Opening hours'],
    ['/debounce_seconds', 'Wait before answering'],
  ];
  return names.find(([prefix]) => path.startsWith(prefix))?.[1] ?? (path || 'Rules');
}

/** The service's refusal in one line: its message, then what each detail adds, by the form's field names. */
function refusalText(message: string, details: ErrorDetail[]): string {
  const added = details.filter((detail) => !message.includes(detail.message));
  if (added.length === 0) return message;
  return `${message}: ${added.map((detail) => `${fieldName(rulePath(detail))} ${detail.message}`).join('; ')}`;
}

/** When the agent answers: enabled, channels, contact tags, opening hours and the wait before answering. */
export function ActivationRulesForm({ agent, onSaved }: { agent: Agent; onSaved: () => Promise<void> }) {
  const channels = useLoad(() => api.GET('/dashboard/api/channels'));
  const [draft, setDraft] = useState(() => draftOf(agent.activation_rules));
  const [refusal, setRefusal] = useState<{ message: string; details: ErrorDetail[] }>();
  const [saved, setSaved] = useState(false);
  const [pending, setPending] = useState(false);
  const errorId = useId();
  const zonesId = useId();
  const hadHours = isObject(agent.activation_rules.opening_hours);

  const set = (change: Partial<Draft>) => {
    setSaved(false);
    setDraft((current) => ({ ...current, ...change }));
  };
  const setWindow = (key: number, change: Partial<OpeningWindow>) =>
    set({ windows: draft.windows.map((w) => (w.key === key ? { ...w, ...change } : w)) });
  /** The props that mark a control the refusal names (`path` or below it) and point at the refusal. */
  const invalid = (path: string, describedBy?: string) => {
    const named = refusal?.details.some((detail) => {
      const at = rulePath(detail);
      return at === path || at.startsWith(`${path}/`);
    });
    const ids = [describedBy, named ? errorId : undefined].filter(Boolean).join(' ');
    return { 'aria-invalid': named || undefined, 'aria-describedby': ids || undefined };
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setPending(true);
    setRefusal(undefined);
    setSaved(false);
    const { data, error, response } = await api.PATCH('/dashboard/api/agents/{id}', {
      params: { path: { id: agent.id } },
      body: { agent: { activation_rules: rulesOf(draft, hadHours, channels.data?.channels) } },
    });
    setPending(false);
    if (!data) return setRefusal({ message: errorMessage(error, response), details: errorDetails(error) });
    setSaved(true);
    await onSaved();
  };

  return (
    <SettingsSection title={<>When {agent.name} answers</>}>
      <form className={`${styles.form} ${styles.card}`} onSubmit={(event) => void submit(event)}>
        <label className={styles.check}>
          <input
            type="checkbox"
            checked={draft.enabled}
            onChange={(event) => set({ enabled: event.target.checked })}
            {...invalid('/enabled')}
          />
          Answers messages
        </label>

        <fieldset className={styles.group}>
          <legend>Channels</legend>
          <p className={styles.hint}>None chosen: the agent answers on every channel.</p>
          <ErrorNote message={channels.error} />
          {channels.data?.channels.length === 0 && <p className={styles.hint}>The business has no channel yet.</p>}
          <div className={styles.members}>
            {channels.data?.channels.map((channel) => (
              <label key={channel.id}>
                <input
                  type="checkbox"
                  checked={draft.channels.includes(channel.id)}
                  onChange={(event) =>
                    set({
                      channels: event.target.checked
                        ? [...draft.channels, channel.id]
                        : draft.channels.filter((id) => id !== channel.id),
                    })
                  }
                  {...invalid('/channels')}
                />
                {channel.name} ({channel.identifier})
              </label>
            ))}
          </div>
        </fieldset>

        <div className={styles.row}>
          <Field label="Only contacts with any of these tags" hint="Separated by commas; empty: every contact.">
            {(props) => (
              <input
                {...props}
                value={draft.any}
                onChange={(event) => set({ any: event.target.value })}
                {...invalid('/contact_tags/any', props['aria-describedby'])}
              />
            )}
          </Field>
          <Field label="No contact with any of these tags" hint="Separated by commas.">
            {(props) => (
              <input
                {...props}
                value={draft.none}
                onChange={(event) => set({ none: event.target.value })}
                {...invalid('/contact_tags/none', props['aria-describedby'])}
              />
            )}
          </Field>
        </div>

        <fieldset className={styles.group}>
          <legend>Opening hours</legend>
          <label className={styles.check}>
            <input
              type="checkbox"
              checked={draft.hours}
              onChange={(event) =>
                set({
                  hours: event.target.checked,
                  windows:
                    event.target.checked && draft.windows.length === 0
                      ? [newWindow(['mon', 'tue', 'wed', 'thu', 'fri'], '09:00', '18:00')]
                      : draft.windows,
                })
              }
            />
            Answer only within opening hours
          </label>
          {draft.hours && (
            <>
              <Field label="Time zone" hint="An IANA time zone, such as Europe/Madrid or America/Sao_Paulo.">
                {(props) => (
                  <input
                    {...props}
                    required
                    maxLength={64}
                    list={zonesId}
                    autoComplete="off"
                    value={draft.timeZone}
                    onChange={(event) => set({ timeZone: event.target.value })}
                    {...invalid('/opening_hours/time_zone', props['aria-describedby'])}
                  />
                )}
              </Field>
              <datalist id={zonesId}>
                {Intl.supportedValuesOf('timeZone').map((zone) => (
                  <option key={zone} value={zone} />
                ))}
              </datalist>
              <p className={styles.hint}>
                Times are HH:MM, 00:00 to 24:00; a window that ends before it starts runs past midnight.
              </p>
              {draft.windows.map((w, index) => (
                <fieldset key={w.key} className={`${styles.group} ${styles.window}`}>
                  <legend>Window {index + 1}</legend>
                  <fieldset className={styles.members}>
                    <legend className="visually-hidden">Days of window {index + 1}</legend>
                    {WEEKDAYS.map(([day, label]) => (
                      <label key={day}>
                        <input
                          type="checkbox"
                          checked={w.days.includes(day)}
                          onChange={(event) =>
                            setWindow(w.key, {
                              days: event.target.checked ? [...w.days, day] : w.days.filter((d) => d !== day),
                            })
                          }
                          {...invalid(`/opening_hours/windows/${index}/days`)}
                        />
                        {label}
                      </label>
                    ))}
                  </fieldset>
                  <div className={styles.row}>
                    {(['from', 'to'] as const).map((end) => (
                      <Field key={end} label={end === 'from' ? 'From' : 'To'}>
                        {(props) => (
                          <input
                            {...props}
                            required
                            pattern={CLOCK}
                            placeholder="HH:MM"
                            inputMode="numeric"
                            value={w[end]}
                            onChange={(event) => setWindow(w.key, { [end]: event.target.value })}
                            {...invalid(`/opening_hours/windows/${index}/${end}`)}
                          />
                        )}
                      </Field>
                    ))}
                    <button
                      type="button"
                      className="button"
                      onClick={() => set({ windows: draft.windows.filter((other) => other.key !== w.key) })}
                    >
                      Remove<span className="visually-hidden"> window {index + 1}</span>
                    </button>
                  </div>
                </fieldset>
              ))}
              <div>
                <button
                  type="button"
                  className="button"
                  onClick={() => set({ windows: [...draft.windows, newWindow(['sat'], '10:00', '14:00')] })}
                >
                  Add window
                </button>
              </div>
            </>
          )}
        </fieldset>

        <Field
          label="Wait before answering (seconds)"
          hint="Messages that arrive meanwhile are answered together: 0 to 60; empty keeps the saved value (3 by default)."
        >
          {(props) => (
            <input
              {...props}
              type="number"
              min={0}
              max={60}
              step="any"
              value={draft.debounce}
              onChange={(event) => set({ debounce: event.target.value })}
              {...invalid('/debounce_seconds', props['aria-describedby'])}
            />
          )}
        </Field>

        <div id={errorId}>
          <ErrorNote message={refusal && refusalText(refusal.message, refusal.details)} />
        </div>
        <div className={styles.inline}>
          <button type="submit" className="button button-primary" disabled={pending} aria-busy={pending}>
            Save rules
          </button>
          {saved && <span role="status">Saved</span>}
        </div>
      </form>
    </SettingsSection>
  );
}
