import type { ReportedAddress } from '../../channels/addresses.ts';
import { channelKind } from '../../channels/registry.ts';
import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
import type { ChannelRow } from '../channels/channels.service.ts';
import type { AddressIdentity } from '../contacts/contact-identity.ts';
import { splitName } from '../contacts/contacts.changes.ts';
import { contactsRepository, type ContactRow, type NewMessageContact } from '../contacts/contacts.repository.ts';
import { contactFieldChanged, type FieldChange } from '../events/events.writer.ts';

/**
 * A sender's address as stored and as looked up (a phone: its digits, and the country-variant-free
 * key), by the rules of the address kind of the channel's provider (registry.ts).
 */
export function senderAddress(channel: ChannelRow, address: string): ReportedAddress {
  const kind = channelKind(channel.provider_kind);
  if (!kind) throw new Error(`channel ${channel.id} has no provider`);
  return kind.address.reported(address);
}

/** The identity of a sender: its address's key, of the address kind of the channel's provider. */
export function senderIdentity(channel: ChannelRow, address: string): AddressIdentity {
  return { kind: channelKind(channel.provider_kind)!.address.kind, value: senderAddress(channel, address).key };
}

/** The row of a contact created by an inbound message: its address, the profile name, the channel's type as source. */
export function newSenderRow(
  channel: ChannelRow,
  identity: AddressIdentity,
  sender: ReportedAddress,
  profileName: string | null,
): NewMessageContact {
  const name = splitName(profileName ?? '');
  return {
    business_id: channel.business_id,
    id: newId(),
    first_name: name.first,
    last_name: name.last,
    identity,
    address: sender.value,
    tags: [],
    custom_fields: {},
    source: channel.type,
  };
}

/** Whether the profile name would rename the contact (it has no name at all, and the profile has one). */
export function wouldTakeProfileName(contact: ContactRow, profileName: string | null): boolean {
  return splitName(profileName ?? '').first !== '' && contact.first_name === '' && contact.last_name === '';
}

/** Whether a profile's picture would be the contact's (it has none). */
export function wouldTakeAvatar(contact: ContactRow): boolean {
  return contact.avatar_url === null || contact.avatar_url === '';
}

/** The profile rule above for a contact found: renamed (with its event) only while it has no name. */
export function takeProfileName(
  trx: Db,
  channel: ChannelRow,
  found: ContactRow,
  profileName: string | null,
): Promise<ContactRow> {
  return takeProfile(trx, channel, found, { name: profileName });
}

/**
 * The profile rules for a contact found: renamed only while it has no name, given the picture (our
 * address of it) only while it has none; one update and one contact_field_changed event for both.
 */
export async function takeProfile(
  trx: Db,
  channel: ChannelRow,
  found: ContactRow,
  profile: { name: string | null; avatarUrl?: string },
): Promise<ContactRow> {
  const businessId = found.business_id;
  const changes: FieldChange[] = [];
  const update: { first_name?: string; last_name?: string; avatar_url?: string } = {};
  if (wouldTakeProfileName(found, profile.name)) {
    const name = splitName(profile.name ?? '');
    changes.push({ field: 'first_name', custom: false, from: found.first_name, to: name.first });
    if (name.last !== '') changes.push({ field: 'last_name', custom: false, from: found.last_name, to: name.last });
    Object.assign(update, { first_name: name.first, last_name: name.last });
  }
  if (profile.avatarUrl && wouldTakeAvatar(found)) {
    changes.push({ field: 'avatar_url', custom: false, from: found.avatar_url, to: profile.avatarUrl });
    update.avatar_url = profile.avatarUrl;
  }
  if (changes.length === 0) return found;
  const updated = await contactsRepository.update(trx, businessId, found.id, update);
  await contactFieldChanged(trx, businessId, {
    contactId: found.id,
    actorType: 'system',
    source: channel.type,
    changes,
  });
  return updated;
}
