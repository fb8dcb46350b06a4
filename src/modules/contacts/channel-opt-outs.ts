import type { Db } from '../../db/database.ts';
import { contactsRepository, type ContactRow } from './contacts.repository.ts';
import { contactsChanged } from '../domain-events/domain-events.writer.ts';
import { contactFieldChanged } from '../events/events.writer.ts';

/** The collected_data field marking a contact as opted out of one channel type (`sms_opted_out`). */
export const channelOptOutField = (channelType: string) => `${channelType}_opted_out`;

/** Whether the contact refused messages: all of them (`opted_out`), or those of this channel type. */
export function isOptedOut(contact: Pick<ContactRow, 'collected_data'>, channelType: string): boolean {
  const data = contact.collected_data;
  return data.opted_out === true || data[channelOptOutField(channelType)] === true;
}

/**
 * Marks the contact as opted out of a channel type because its provider said they unsubscribed
 * (an SMS recipient who replied STOP), or no longer (`optedOut` false: they replied START), with the
 * time, its contact_field_changed event and its contact_changed domain event. While opted out, a
 * send on that type is refused (`blocked`) unless it records an opt-in. Nothing changes when the
 * contact is so already.
 */
export async function recordChannelOptOut(
  trx: Db,
  businessId: string,
  contactId: string,
  channelType: string,
  optedOut = true,
): Promise<void> {
  const contact = await contactsRepository.findForUpdate(trx, businessId, contactId);
  const key = channelOptOutField(channelType);
  if (!contact || (contact.collected_data[key] === true) === optedOut) return;
  const before = contact.collected_data;
  await contactsRepository.update(trx, businessId, contactId, {
    collected_data: { ...before, [key]: optedOut, [`${key}_at`]: new Date().toISOString() },
  });
  await contactFieldChanged(trx, businessId, {
    contactId,
    actorType: 'system',
    source: 'provider',
    changes: [{ field: `collected_data.${key}`, custom: false, from: before[key] ?? null, to: optedOut }],
  });
  await contactsChanged(trx, businessId, [contactId], 'updated');
}
