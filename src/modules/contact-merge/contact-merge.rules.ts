import type { FieldChange } from '../events/events.writer.ts';
import type { ContactRow } from '../contacts/contacts.repository.ts';
import type { FieldChoices } from './contact-merge.schemas.ts';

/** What a merge does to the survivor: its new values, the event's changes, and the aliases it gains. */
export interface MergePlan {
  patch: Partial<
    Pick<
      ContactRow,
      (typeof FILLED)[number] | (typeof CHOSEN)[number] | 'phone_key' | 'tags' | 'custom_fields' | 'collected_data'
    >
  >;
  changes: FieldChange[];
  aliases: { kind: 'email' | 'phone'; value: string }[];
}

/** Taken from the loser only when the survivor has none. */
const FILLED = ['phone_number', 'external_id', 'avatar_url', 'source', 'assigned_user_id'] as const;

/** Taken from the loser when the survivor has none, or when field_choices says so. */
const CHOSEN = ['first_name', 'last_name', 'email'] as const;

const isEmpty = (value: unknown) => value === null || value === undefined || value === '';
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function combineObjects(
  survivor: Record<string, unknown>,
  loser: Record<string, unknown>,
  loserWins: (key: string) => boolean,
): Record<string, unknown> {
  const combined = { ...loser, ...survivor };
  for (const key of Object.keys(loser)) if (loserWins(key)) combined[key] = loser[key];
  return combined;
}

function objectChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  name: (key: string) => string,
  custom: boolean,
): FieldChange[] {
  return Object.keys(after)
    .filter((key) => !same(before[key], after[key]))
    .map((key) => ({ field: name(key), custom, from: before[key] ?? null, to: after[key] }));
}

/**
 * Decides the merged contact. Pure: the service applies the plan in one transaction.
 * `loserAssignee` is the email of the loser's assigned user, for the event.
 */
export function planMerge(
  survivor: ContactRow,
  loser: ContactRow,
  choices: FieldChoices,
  loserAssignee: string | null = null,
): MergePlan {
  const patch: MergePlan['patch'] = {};
  const changes: FieldChange[] = [];
  const set = <K extends keyof MergePlan['patch']>(field: K, value: ContactRow[K]) => {
    patch[field] = value;
    // The event names an assignee by email, under assigned_user, as PATCH does.
    if (field === 'assigned_user_id')
      changes.push({ field: 'assigned_user', custom: false, from: null, to: loserAssignee });
    else changes.push({ field, custom: false, from: survivor[field], to: value });
  };

  for (const field of CHOSEN) {
    const loserValue = loser[field];
    if (isEmpty(loserValue) || loserValue === survivor[field]) continue;
    if (isEmpty(survivor[field]) || choices[field] === 'loser') set(field, loserValue);
  }
  for (const field of FILLED) {
    if (isEmpty(survivor[field]) && !isEmpty(loser[field])) set(field, loser[field]);
  }
  if (patch.phone_number !== undefined) patch.phone_key = loser.phone_key;

  if (loser.tags.some((tag) => !survivor.tags.includes(tag)))
    set('tags', [...new Set([...survivor.tags, ...loser.tags])]);

  const customFields = combineObjects(survivor.custom_fields, loser.custom_fields, () => false);
  const customChanges = objectChanges(survivor.custom_fields, customFields, (key) => key, true);
  if (customChanges.length > 0) patch.custom_fields = customFields;

  const collected = combineObjects(
    survivor.collected_data,
    loser.collected_data,
    (key) => choices[`collected_data.${key}`] === 'loser',
  );
  const collectedChanges = objectChanges(survivor.collected_data, collected, (key) => `collected_data.${key}`, false);
  if (collectedChanges.length > 0) patch.collected_data = collected;

  // Every email and phone either contact had and the survivor does not keep stays reachable as an
  // alias: the loser's, and the survivor's own email when field_choices replaced it.
  const finalEmail = (patch.email ?? survivor.email)?.toLowerCase();
  const finalPhoneKey = patch.phone_key ?? survivor.phone_key;
  const aliases: MergePlan['aliases'] = [];
  for (const email of new Set(
    [loser.email, survivor.email].filter((e) => !isEmpty(e)).map((e) => (e as string).toLowerCase()),
  )) {
    if (email !== finalEmail) aliases.push({ kind: 'email', value: email });
  }
  if (!isEmpty(loser.phone_key) && loser.phone_key !== finalPhoneKey)
    aliases.push({ kind: 'phone', value: loser.phone_key });

  return { patch, changes: [...changes, ...customChanges, ...collectedChanges], aliases };
}
