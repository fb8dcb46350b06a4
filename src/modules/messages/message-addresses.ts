/** What a message's `from` and `to` are made of. */
interface AddressedMessage {
  direction: 'inbound' | 'outbound';
  channel: string;
  sender_address: string | null;
  recipient_address: string | null;
}

/**
 * A message's `from` and `to` as the API shows them (per-contact list, webhook): the addresses the
 * channel recorded. A message without them (imported history, messages written in the dashboard)
 * is addressed as the channel would have: the contact by its phone digits, as WhatsApp records
 * them (by its email on the email channel, or when it has no phone), and the business by
 * `businessAddress` (the identifier of the conversation's channel). With no channel known there is
 * no business address to show: the contract makes `from` and `to` identifiers, always strings, so
 * that side is empty rather than the channel's name, which no client could take for an address.
 */
export function messageAddresses(
  message: AddressedMessage,
  contact: { phone_number: string | null; email: string | null },
  businessAddress: string | null = null,
): { from: string; to: string } {
  const contactSide =
    message.channel !== 'email' && contact.phone_number ? contact.phone_number : (contact.email ?? '');
  const businessSide = businessAddress ?? '';
  const inbound = message.direction === 'inbound';
  return {
    from: message.sender_address ?? (inbound ? contactSide : businessSide),
    to: message.recipient_address ?? (inbound ? businessSide : contactSide),
  };
}
