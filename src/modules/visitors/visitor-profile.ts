import type { Selectable } from 'kysely';
import { emailAddress, phoneAddress } from '../../channels/addresses.ts';
import type { Db } from '../../db/database.ts';
import type { ContactsTable } from '../../db/types.ts';
import { invalid } from '../../lib/domain-errors.ts';
import { splitName } from '../contacts/contacts.changes.ts';
import { contactsRepository } from '../contacts/contacts.repository.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { contactFieldChanged, type FieldChange } from '../events/events.writer.ts';

type ContactRow = Selectable<ContactsTable>;

/** What a visitor is said to be: by the site for a signed-in customer, or typed by the visitor. */
export interface VisitorProfile {
  name?: string;
  email?: string;
  phone?: string;
}

/** The profile with its email and phone in their stored forms; 400 naming the field that is neither. */
export function normaliseProfile(profile: VisitorProfile, path: string): VisitorProfile {
  const out: VisitorProfile = {};
  if (profile.name?.trim()) out.name = profile.name.trim();
  if (profile.email !== undefined) {
    const email = emailAddress.normalise(profile.email);
    if (!email) throw invalid('email is not an email address', [{ path: `${path}/email` }]);
    out.email = email.value;
  }
  if (profile.phone !== undefined) {
    const phone = phoneAddress.normalise(profile.phone);
    if (!phone) throw invalid('phone is not a phone number with country code', [{ path: `${path}/phone` }]);
    out.phone = phone.value;
  }
  return out;
}

/**
 * Applies a visitor's profile to their contact, locked in the caller's transaction. What the site
 * vouched for (`verified`) replaces the contact's fields; what the visitor typed only fills empty
 * ones, so it never overwrites what the site or the team set. An email or phone another contact
 * holds stays that contact's address (contactsRepository.update settles who holds each). Answers
 * whether the contact changed.
 */
export async function applyVisitorProfile(
  trx: Db,
  businessId: string,
  contactId: string,
  profile: VisitorProfile,
  verified: boolean,
  source: string,
): Promise<boolean> {
  const contact = await contactsRepository.findForUpdate(trx, businessId, contactId);
  if (!contact) return false;
  const takes = (current: string | null, given: string | undefined) =>
    given !== undefined && given !== (current ?? '') && (verified || !current);
  const values: Partial<ContactRow> = {};
  const changes: FieldChange[] = [];
  const change = (field: 'first_name' | 'last_name' | 'email' | 'phone_number', from: string | null, to: string) =>
    changes.push({ field, custom: false, from, to });
  if (profile.name !== undefined) {
    const name = splitName(profile.name);
    const named = contact.first_name !== '' || contact.last_name !== '';
    if ((verified || !named) && (name.first !== contact.first_name || name.last !== contact.last_name)) {
      values.first_name = name.first;
      values.last_name = name.last;
      change('first_name', contact.first_name, name.first);
      change('last_name', contact.last_name, name.last);
    }
  }
  if (takes(contact.email, profile.email)) {
    values.email = profile.email!;
    change('email', contact.email, profile.email!);
  }
  if (takes(contact.phone_number, profile.phone)) {
    const phone = phoneAddress.normalise(profile.phone!)!;
    values.phone_number = phone.value;
    values.phone_key = phone.key;
    change('phone_number', contact.phone_number, phone.value);
  }
  if (changes.length === 0) return false;
  await contactsRepository.update(trx, businessId, contactId, values);
  await contactFieldChanged(trx, businessId, { contactId, actorType: 'system', source, changes });
  await contactsChanged(trx, businessId, [contactId], 'updated');
  return true;
}

/** Whether applying the profile could change anything (a verified one always may; no profile never does). */
export function hasProfile(profile: VisitorProfile): boolean {
  return profile.name !== undefined || profile.email !== undefined || profile.phone !== undefined;
}
