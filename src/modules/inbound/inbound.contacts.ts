import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
import { normalisePhone } from '../../lib/phone.ts';
import { splitName } from '../contacts/contacts.changes.ts';
import { contactsRepository, type ContactRow } from '../contacts/contacts.repository.ts';
import { contactFieldChanged, type FieldChange } from '../events/events.writer.ts';
import { messagingRepository } from '../messaging/messaging.repository.ts';

/** A sender's phone as stored (digits) and as looked up (the country-variant-free key). */
export function senderPhone(address: string): { digits: string | null; key: string } {
  const phone = normalisePhone(address);
  if (phone) return phone;
  const digits = address.replace(/\D/g, '');
  return { digits: digits === '' ? null : digits, key: digits === '' ? address : digits };
}

/** The advisory-lock name ContactsService.create uses for a phone, so inbound and API creations take turns. */
export const phoneLockName = (key: string) => `phone_number:${key}`;

/**
 * The contact who sent an inbound message: found by the phone key (its own number or an alias, so
 * 549.../54... and 521.../52... find the same contact), or created with the profile name and source
 * `whatsapp`. Profile rule: an existing contact takes the WhatsApp profile name only while it has no
 * name at all (first and last name empty); a name given by the business or an import is never
 * overwritten. The caller holds the phone's advisory lock (see phoneLockName).
 */
export async function resolveSender(
  trx: Db,
  businessId: string,
  address: string,
  profileName: string | null,
): Promise<ContactRow> {
  const phone = senderPhone(address);
  const found = (await messagingRepository.contactsByPhoneKey(trx, businessId, [phone.key])).get(phone.key);
  if (!found) return contactsRepository.insert(trx, newSenderRow(businessId, phone, profileName));
  return takeProfileName(trx, found, profileName);
}

/** The row of a contact created by an inbound message: the profile name, source `whatsapp`. */
export function newSenderRow(
  businessId: string,
  phone: { digits: string | null; key: string },
  profileName: string | null,
) {
  const name = splitName(profileName ?? '');
  return {
    business_id: businessId,
    id: newId(),
    first_name: name.first,
    last_name: name.last,
    phone_number: phone.digits,
    phone_key: phone.key,
    tags: [],
    custom_fields: {},
    source: 'whatsapp',
  };
}

/** Whether the profile name would rename the contact (it has no name at all, and the profile has one). */
export function wouldTakeProfileName(contact: ContactRow, profileName: string | null): boolean {
  return splitName(profileName ?? '').first !== '' && contact.first_name === '' && contact.last_name === '';
}

/** The profile rule above for a contact found: renamed (with its event) only while it has no name. */
export async function takeProfileName(trx: Db, found: ContactRow, profileName: string | null): Promise<ContactRow> {
  if (!wouldTakeProfileName(found, profileName)) return found;
  const businessId = found.business_id;
  const name = splitName(profileName ?? '');
  const changes: FieldChange[] = [{ field: 'first_name', custom: false, from: found.first_name, to: name.first }];
  if (name.last !== '') changes.push({ field: 'last_name', custom: false, from: found.last_name, to: name.last });
  const updated = await contactsRepository.update(trx, businessId, found.id, {
    first_name: name.first,
    last_name: name.last,
  });
  await contactFieldChanged(trx, businessId, { contactId: found.id, actorType: 'system', source: 'whatsapp', changes });
  return updated;
}
