import type { Updateable } from 'kysely';
import type { ContactsTable } from '../../db/types.ts';
import { invalid } from '../../lib/domain-errors.ts';
import type { FieldChange } from '../events/events.writer.ts';
import type { ContactRow } from './contacts.repository.ts';
import type { UpdateContactBody } from './contacts.schemas.ts';

/** A contact may hold more custom fields than one request sends (imports, merges), up to this. */
export const MAX_STORED_CUSTOM_FIELDS = 100;

type Assignee = { id: string; email: string } | null;

/** What an update writes: the changed columns and the `contact_field_changed` entries describing them. */
export interface UpdatePlan {
  values: Updateable<ContactsTable>;
  changes: FieldChange[];
}

/** Tags in first-seen order, without repeats. */
export const uniqueTags = (tags: string[]): string[] => [...new Set(tags)];

const sameTags = (a: string[], b: string[]) => a.length === b.length && a.every((tag) => b.includes(tag));

/** Splits a full name: the first word is the first name, the rest the last name. */
export function splitName(name: string): { first: string; last: string } {
  const [first = '', ...rest] = name.trim().split(/\s+/);
  return { first, last: rest.join(' ') };
}

/**
 * Compares the request with the stored contact and keeps only real changes, so an update that
 * changes nothing writes nothing and records no event.
 * `assignee` is the user named by assigned_user (undefined when not sent); `currentAssignee` the
 * user assigned now.
 */
export function planUpdate(
  row: ContactRow,
  body: UpdateContactBody,
  assignee: Assignee | undefined,
  currentAssignee: Assignee,
): UpdatePlan {
  const values: Updateable<ContactsTable> = {};
  const changes: FieldChange[] = [];
  const change = (field: string, from: unknown, to: unknown, custom = false) =>
    changes.push({ field, custom, from, to });

  if (body.name !== undefined) {
    const { first, last } = splitName(body.name);
    if (first === '') throw invalid('name must contain a non-blank character', [{ path: '/name' }]);
    if (first !== row.first_name) {
      values.first_name = first;
      change('first_name', row.first_name, first);
    }
    if (last !== row.last_name) {
      values.last_name = last;
      change('last_name', row.last_name, last);
    }
  }

  if (body.tags !== undefined) {
    const tags = uniqueTags(body.tags);
    if (!sameTags(tags, row.tags)) {
      values.tags = tags;
      change('tags', row.tags, tags);
    }
  }

  if (body.custom_fields !== undefined) {
    const merged: Record<string, unknown> = { ...row.custom_fields };
    for (const [key, to] of Object.entries(body.custom_fields)) {
      const from = Object.hasOwn(merged, key) ? merged[key] : null;
      if (from === to) continue;
      if (to === null) delete merged[key];
      else merged[key] = to;
      change(key, from, to, true);
    }
    const count = Object.keys(merged).length;
    if (count > MAX_STORED_CUSTOM_FIELDS && count > Object.keys(row.custom_fields).length) {
      throw invalid(`a contact holds at most ${MAX_STORED_CUSTOM_FIELDS} custom fields`, [{ path: '/custom_fields' }]);
    }
    if (changes.some((c) => c.custom)) values.custom_fields = merged;
  }

  const target = body.unassign_user === true ? null : assignee;
  if (target !== undefined && (target?.id ?? null) !== row.assigned_user_id) {
    values.assigned_user_id = target?.id ?? null;
    change('assigned_user', currentAssignee?.email ?? null, target?.email ?? null);
  }

  return { values, changes };
}
